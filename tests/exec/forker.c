/* forker.c — each session forks a child that allocates, calls the API and runs a shell (a
 * grandchild through exec): none of them may report on the parent's channel, and the child
 * must see the API inactive. Exits 30 when a child saw itself measured.
 *
 *   exec_forker SESSIONS
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int sessions = argc > 1 ? atoi(argv[1]) : 5;
    for (int s = 0; s < sessions; s++) {
        leakgate_session_begin();
        pid_t pid = fork();
        if (pid == 0) {
            int active = leakgate_active();
            leakgate_session_begin(); /* inert: nothing reaches leakgate */
            leakgate_tag_push("child/buffer");
            void *kept = malloc(1 << 20); /* never freed: the child's, not the session's */
            leakgate_tag_pop();
            leakgate_session_end();
            int sh = system("echo grandchild $$ >/dev/null; exit 0");
            (void)kept;
            _exit(active || sh != 0 ? 1 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "forker: the child saw itself measured (status %d)\n", st);
            return 30;
        }
        if (leakgate_session_end() != LEAKGATE_OK) return 31;
    }
    printf("forker: %d sessions\n", sessions);
    return 0;
}
