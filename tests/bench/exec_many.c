/* exec_many.c — N empty sessions through the leakgate.h API, nothing allocated in them: the cost
 * of exec's own judging per session (docs/exec.md, "Long runs").
 *
 *   /usr/bin/time -f '%e s, %M KiB' build/harness/leakgate exec --quiet --no-reports -- \
 *       build/tests/bench/exec_many N
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 400;
    if (n < 1) {
        fprintf(stderr, "usage: exec_many N (sessions, at least 1)\n");
        return 2;
    }
    for (int s = 0; s < n; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 10;
        if (leakgate_session_end() != LEAKGATE_OK) return 11;
    }
    return 0;
}
