/* crasher.c — runs sessions through the API, each keeping LEAK_MIB MiB (0 by default), then
 * fails the way it is told, in the middle of the next session: `segv` (a bad write), `abort`,
 * `sigkill` (SIGKILL raised on itself, as the OOM killer would), or `exit3` (exit status 3); or
 * ends it
 * otherwise: `keep:MIB` keeps MIB MiB there and exits 0 without ending it; `stop` stops itself
 * (SIGSTOP; a child it forks continues it two seconds later) and then ends it; `hang` prints its
 * pid and sleeps for a minute inside it.
 *
 *   exec_crasher SESSIONS_BEFORE segv|abort|sigkill|exit3|keep:MIB|stop|hang [LEAK_MIB]
 */
#include <leakgate.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *crasher_kept; /* reachable (and not optimised away) */

int main(int argc, char **argv)
{
    int before = argc > 1 ? atoi(argv[1]) : 3;
    const char *how = argc > 2 ? argv[2] : "segv";
    size_t leak = argc > 3 ? strtoul(argv[3], NULL, 10) << 20 : 0;
    for (int s = 0; s < before; s++) {
        leakgate_session_begin();
        free(malloc(1000));
        if (leak && (crasher_kept = malloc(leak))) memset(crasher_kept, 1, leak); /* resident */
        leakgate_session_end();
    }
    leakgate_session_begin();
    fflush(stdout);
    if (!strncmp(how, "keep:", 5)) {
        size_t n = strtoul(how + 5, NULL, 10) << 20;
        crasher_kept = malloc(n);
        memset(crasher_kept, 1, n); /* resident, not only reserved */
        return 0;                   /* the session is never ended: exit ends it */
    }
    if (!strcmp(how, "stop")) {
        if (fork() == 0) { /* inert under exec: a child */
            sleep(2);
            kill(getppid(), SIGCONT);
            _exit(0);
        }
        raise(SIGSTOP);
        wait(NULL);
        leakgate_session_end();
        return 0;
    }
    if (!strcmp(how, "hang")) {
        printf("pid %d\n", (int)getpid());
        fflush(stdout);
        sleep(60);
        return 0;
    }
    if (!strcmp(how, "exit3")) exit(3);
    if (!strcmp(how, "sigkill")) raise(SIGKILL);
    if (!strcmp(how, "abort")) abort();
    volatile int *p = (int *)(uintptr_t)argc; /* not a valid address */
    *p = 1;
    return 0;
}
