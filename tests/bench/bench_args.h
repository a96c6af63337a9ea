/* bench_args.h — a benchmark's command line, read from a table of its options.
 *
 *   const char *preset = "electricity";
 *   int steps = 10;
 *   bool stacks = false;
 *   const struct ba_option opts[] = {
 *       {"--preset", BA_STR, &preset}, {"--steps", BA_INT, &steps}, {"--stacks", BA_FLAG, &stacks},
 *   };
 *   if (!ba_parse(argc, argv, opts, LG_ARRAY_LEN(opts))) {
 *       fprintf(stderr, "usage: bench_x [--preset P] [--steps K] [--stacks]\n");
 *       return 2;
 *   }
 */
#ifndef LG_BENCH_ARGS_H
#define LG_BENCH_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum ba_kind {
    BA_STR,  /* --name VALUE into a const char * */
    BA_INT,  /* --name N into an int (atoi) */
    BA_FLAG, /* --name alone sets a bool */
};

struct ba_option {
    const char *name; /* "--steps" */
    enum ba_kind kind;
    void *value; /* borrowed: where the option's value goes */
};

/* Reads argv[1..argc) into the options' values; false on an unknown option or one that lacks
 * its value (the caller prints its usage). */
static inline bool ba_parse(int argc, char **argv, const struct ba_option *opts, size_t n)
{
    for (int i = 1; i < argc; i++) {
        const struct ba_option *o = opts;
        while (o < opts + n && strcmp(argv[i], o->name)) o++;
        if (o == opts + n) return false;
        if (o->kind == BA_FLAG) {
            *(bool *)o->value = true;
            continue;
        }
        if (i + 1 == argc) return false;
        const char *v = argv[++i];
        if (o->kind == BA_STR)
            *(const char **)o->value = v;
        else
            *(int *)o->value = atoi(v);
    }
    return true;
}

#endif
