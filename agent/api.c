/* api.c — libleakgate.so, the library a program links for leakgate.h. Outside `leakgate exec`
 * every function is a test of one pointer and a return; under exec the agent's table
 * (lga_ops.h) is there and each call goes to it. This library holds no allocator, no state and
 * no dependency beyond libc: linking it changes nothing in how the program runs. */
#include "leakgate.h"
#include "lga_ops.h"

/* Resolved by the dynamic linker: the agent's table when the agent is loaded, else NULL. */
extern const struct lga_ops lga_agent_ops __attribute__((weak));

/* The agent's table when it serves this API version, else NULL. */
static inline const struct lga_ops *ops(void)
{
    const struct lga_ops *o = &lga_agent_ops;
    if (__builtin_expect(o == NULL, 1)) return NULL;
    return o->version == LEAKGATE_API_VERSION ? o : NULL;
}

int leakgate_api_version(void) { return LEAKGATE_API_VERSION; }

const char *leakgate_strerror(int status)
{
    switch (status) {
#define LEAKGATE_X_TEXT(name, value, text)                                                         \
    case LEAKGATE_##name: return text;
        LEAKGATE_STATUS_MAP(LEAKGATE_X_TEXT)
#undef LEAKGATE_X_TEXT
    }
    return "unknown status";
}

int leakgate_active(void)
{
    const struct lga_ops *o = ops();
    return o ? o->active() : 0;
}

int leakgate_session_begin(void)
{
    const struct lga_ops *o = ops();
    return o ? o->session_begin() : LEAKGATE_OK;
}

int leakgate_session_end(void)
{
    const struct lga_ops *o = ops();
    return o ? o->session_end() : LEAKGATE_OK;
}

int leakgate_tag_push(const char *name)
{
    const struct lga_ops *o = ops();
    return o ? o->tag_push(name) : LEAKGATE_OK;
}

int leakgate_tag_pop(void)
{
    const struct lga_ops *o = ops();
    return o ? o->tag_pop() : LEAKGATE_OK;
}

int leakgate_track(const void *obj, const char *kind, const char *name, const void *holder,
                   const char *file, int line, const char *func)
{
    const struct lga_ops *o = ops();
    return o ? o->track(obj, kind, name, holder, file, line, func) : LEAKGATE_OK;
}

int leakgate_retain(const void *obj, const void *holder, const char *file, int line,
                    const char *func)
{
    const struct lga_ops *o = ops();
    return o ? o->retain(obj, holder, file, line, func) : LEAKGATE_OK;
}

int leakgate_release(const void *obj, const void *holder, const char *file, int line,
                     const char *func)
{
    const struct lga_ops *o = ops();
    return o ? o->release(obj, holder, file, line, func) : LEAKGATE_OK;
}

int leakgate_untrack(const void *obj, const char *file, int line, const char *func)
{
    const struct lga_ops *o = ops();
    return o ? o->untrack(obj, file, line, func) : LEAKGATE_OK;
}

int leakgate_session_note(const char *text)
{
    const struct lga_ops *o = ops();
    return o && LGA_OPS_HAS(o, session_note) ? o->session_note(text) : LEAKGATE_OK;
}

int leakgate_set_session_hook(leakgate_session_hook fn, void *arg)
{
    const struct lga_ops *o = ops();
    return o && LGA_OPS_HAS(o, set_session_hook) ? o->set_session_hook(fn, arg) : LEAKGATE_OK;
}

int leakgate_set_settle_hook(leakgate_session_hook fn, void *arg)
{
    const struct lga_ops *o = ops();
    return o && LGA_OPS_HAS(o, set_settle_hook) ? o->set_settle_hook(fn, arg) : LEAKGATE_OK;
}

int leakgate_profiling_armed(void)
{
    const struct lga_ops *o = ops();
    return o && LGA_OPS_HAS(o, profiling_armed) ? o->profiling_armed() : 0;
}

int leakgate_session_overhead(long long bytes)
{
    const struct lga_ops *o = ops();
    return o && LGA_OPS_HAS(o, session_overhead) ? o->session_overhead(bytes) : LEAKGATE_OK;
}
