/* dropper.c — a program that drops leakgate's agent mid-run, for exec's tests: SESSIONS
 * sessions from the leakgate.h API; after session K it closes the agent's socket
 * (LEAKGATE_AGENT_FD), and every later session leaks 1 MiB that leakgate can no longer see.
 * It prints each session_end's return value, one a line ("end 5 = 2"), on stdout.
 *
 *   exec_dropper SESSIONS K
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *dropper_kept[1024]; /* reachable: an untagged leak, as in a real trainer */

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 12, k = argc > 2 ? atoi(argv[2]) : 4;
    const char *fd = getenv("LEAKGATE_AGENT_FD");
    for (int i = 0; i < n && i < 1024; i++) {
        leakgate_session_begin();
        if (i > k) {
            dropper_kept[i] = malloc(1 << 20);
            memset(dropper_kept[i], 1, 1 << 20);
        }
        printf("end %d = %d\n", i, leakgate_session_end());
        fflush(stdout);
        if (i == k && fd) close(atoi(fd));
    }
    return 0;
}
