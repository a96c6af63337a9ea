/* crasher.c — runs sessions through the API, then fails the way it is told, in the middle of
 * the next session: `segv` (a bad write), `abort`, or `exit3` (exit status 3).
 *
 *   exec_crasher SESSIONS_BEFORE segv|abort|exit3
 */
#include <leakgate.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int before = argc > 1 ? atoi(argv[1]) : 3;
    const char *how = argc > 2 ? argv[2] : "segv";
    for (int s = 0; s < before; s++) {
        leakgate_session_begin();
        free(malloc(1000));
        leakgate_session_end();
    }
    leakgate_session_begin();
    fflush(stdout);
    if (!strcmp(how, "exit3")) exit(3);
    if (!strcmp(how, "abort")) abort();
    volatile int *p = (int *)(uintptr_t)argc; /* not a valid address */
    *p = 1;
    return 0;
}
