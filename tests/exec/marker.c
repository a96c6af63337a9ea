/* marker.c — a program that knows nothing of leakgate: it prints a line per epoch, and with
 * `leak` keeps 192 KiB per epoch from keep_history() (`leak:BYTES` another amount,
 * `leak:BYTES@FROM` only from epoch FROM on). leakgate exec --session-marker finds its sessions
 * in its output. How it prints is chosen so each path the agent watches is tested (`long:N`:
 * printf, with N characters more on the marker line):
 *
 *   exec_marker EPOCHS [leak[:BYTES[@FROM]]|clean] [printf|fprintf|write|puts|long:N]
 *               [stdout|stderr]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *marker_kept[1024];

__attribute__((noinline)) void keep_history(int epoch, size_t bytes)
{
    char *p = malloc(bytes);
    memset(p, epoch, bytes);
    marker_kept[epoch % 1024] = p;
}

__attribute__((noinline)) static long epoch_work(int epoch)
{
    long sum = 0;
    for (int i = 0; i < 500; i++) {
        char *p = malloc(100 + (size_t)(i * 37 % 4000));
        p[0] = (char)i;
        sum += p[0] + epoch;
        free(p);
    }
    return sum;
}

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 6;
    size_t leak = 0;
    int from = 0;
    if (argc > 2 && !strncmp(argv[2], "leak", 4))
        leak = argv[2][4] == ':' ? strtoul(argv[2] + 5, NULL, 10) : 192 << 10;
    if (argc > 2 && strchr(argv[2], '@')) from = atoi(strchr(argv[2], '@') + 1);
    const char *how = argc > 3 ? argv[3] : "printf";
    int pad = !strncmp(how, "long:", 5) ? atoi(how + 5) : 0;
    FILE *out = argc > 4 && !strcmp(argv[4], "stderr") ? stderr : stdout;
    long sum = 0;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* fully buffered, as on a pipe: the agent copes */
    printf("starting %d epochs\n", epochs);
    for (int e = 0; e < epochs; e++) {
        sum += epoch_work(e);
        if (leak && e >= from) keep_history(e, leak);
        char line[64];
        int n = snprintf(line, sizeof line, "epoch %d done, loss %.3f\n", e, 1.0 / (e + 1));
        if (pad > 0)
            printf("epoch %d done, loss %.3f %*s\n", e, 1.0 / (e + 1), pad, "(the tail)");
        else if (!strcmp(how, "write"))
            (void)!write(fileno(out), line, (size_t)n);
        else if (!strcmp(how, "puts") && out == stdout)
            fputs(line, stdout);
        else if (!strcmp(how, "fprintf"))
            fprintf(out, "%s", line);
        else
            printf("%s", line);
    }
    printf("sum %ld\n", sum);
    return 0;
}
