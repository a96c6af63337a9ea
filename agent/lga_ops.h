/* lga_ops.h — how libleakgate.so (the link-time API, agent/api.c) reaches the agent
 * (libleakgate-agent.so, preloaded by leakgate exec).
 *
 * The agent exports one table, lga_agent_ops. The API library refers to it weakly: the dynamic
 * linker resolves the reference when the agent is loaded (preloaded, so in the global scope —
 * also for a libleakgate.so that Python or another runtime dlopens later) and leaves it NULL
 * otherwise, so every API call outside exec is one test of a pointer. The table's `version`
 * is LEAKGATE_API_VERSION of the agent; `size` lets a newer agent serve an older library.
 */
#ifndef LGA_OPS_H
#define LGA_OPS_H

#include <stddef.h>

struct lga_ops {
    int version;
    size_t size;
    int (*active)(void);
    int (*session_begin)(void);
    int (*session_end)(void);
    int (*tag_push)(const char *name);
    int (*tag_pop)(void);
    int (*track)(const void *obj, const char *kind, const char *name, const void *holder,
                 const char *file, int line, const char *func);
    int (*retain)(const void *obj, const void *holder, const char *file, int line,
                  const char *func);
    int (*release)(const void *obj, const void *holder, const char *file, int line,
                   const char *func);
    int (*untrack)(const void *obj, const char *file, int line, const char *func);
    /* added after the first release: check `size` before calling */
    int (*session_note)(const char *text);
    int (*set_session_hook)(void (*fn)(void *arg, int index), void *arg);
    int (*profiling_armed)(void);
    int (*session_overhead)(long long bytes);
    int (*set_settle_hook)(void (*fn)(void *arg, int index), void *arg);
};
/* Whether table o has member m (a newer library may meet an older agent). */
#define LGA_OPS_HAS(o, m) ((o)->size >= offsetof(struct lga_ops, m) + sizeof((o)->m))

extern const struct lga_ops lga_agent_ops;

#endif
