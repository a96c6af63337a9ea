/* tool_main.c — lg-report: the report and compare commands on their own, for use before (and
 * beside) the leakgate binary. `lg-report report RESULTS -o DIR`, `lg-report compare BASE HEAD`. */
#include <stdio.h>
#include <string.h>

#include "reports.h"

static const char usage[] = "usage: lg-report report RESULTS -o DIR [--no-plots]\n"
                            "       lg-report compare BASE HEAD\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "report") == 0) return rpt_cmd_report(argc - 1, argv + 1);
    if (strcmp(argv[1], "compare") == 0) return rpt_cmd_compare(argc - 1, argv + 1);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "lg-report: unknown command '%s'\n%s", argv[1], usage);
    return 2;
}
