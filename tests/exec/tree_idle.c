/* tree_idle.c — linked with -static (exec_tree_static): a child of exec_tree that the agent
 * cannot enter, idle until its stdin closes, so that exec sees it at every session's end and
 * names it as seen by its RSS only. */
#include <unistd.h>

int main(void)
{
    char c;
    while (read(0, &c, 1) == 1) {
    }
    return 0;
}
