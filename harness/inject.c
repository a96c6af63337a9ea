/* inject.c — `--inject NAME[:SIZE][@FIRST[/EVERY]]`: which known leak class to re-create, how
 * much per session (the untagged classes), from which session on and how often, so detection
 * limits and both shapes of slow leak can be measured: "raw-malloc:256KiB@40" leaks 256 KiB of
 * untagged malloc in every session from session 40; "raw-malloc:1MiB@2/40" in sessions 2, 42,
 * 82, ... (a checkpoint kept every 40th session). Each name maps to a switch inside the
 * trainer's real code path (trainer.h). raw-noise is not a leak: the harness holds a random
 * amount up to SIZE across one session's end and frees it in the next (session.c), to show that
 * noise raises no alarm. */
#include <ctype.h>
#include <errno.h>
#include <sys/sysinfo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"

/* Every fault: the trainer's (TR_FAULTS, trainer.h) and the harness's own raw-noise. */
enum needs { NONE, CUDA, INT8, QAT };
static const struct fault {
    const char *name;
    bool sized;
    enum needs needs;
    const char *what;
} faults[] = {
#define X(n_, f_, k_, r_, w_) {n_, TR_FAULT_SIZED_##k_, r_, w_},
#define TR_FAULT_SIZED_FLAG   false
#define TR_FAULT_SIZED_SIZE   true
    TR_FAULTS(X)
#undef X
        {"raw-noise", true, NONE,
         "not a leak: a random amount held for one session, freed in the next"},
};

static const struct fault *fault_named(const char *name)
{
    for (size_t i = 0; i < LG_ARRAY_LEN(faults); i++)
        if (!strcmp(faults[i].name, name)) return &faults[i];
    return NULL;
}

static bool sized(const char *name)
{
    const struct fault *f = fault_named(name);
    return f && f->sized;
}

int hx_inject_check(const struct hx_inject *in, bool cuda, int modes)
{
    const struct fault *f = fault_named(in->name);
    LG_ASSERT(f && "a parsed fault has a known name");
    if (f->needs == CUDA && !cuda)
        return lg_fail(LG_EINVAL, "--inject %s needs --device cuda", in->name);
    if (f->needs == INT8 && !(modes & HX_MODE_INT8))
        return lg_fail(LG_EINVAL, "--inject %s needs int8 in --modes", in->name);
    if (f->needs == QAT && !(modes & HX_MODE_QAT))
        return lg_fail(LG_EINVAL, "--inject %s needs qat in --modes", in->name);
    return LG_OK;
}

int hx_parse_size(const char *s, size_t *out) { return lg_parse_size(s, out); }

/* Parses "@FIRST[/EVERY]" into inj. */
static int parse_when(const char *spec, char *at, struct hx_inject *inj)
{
    char *slash = strchr(at, '/');
    if (slash) *slash++ = '\0';
    char *end;
    errno = 0;
    long f = strtol(at, &end, 10);
    if (end == at || *end || errno || f < 0 || f > 1000000)
        return lg_fail(LG_EINVAL, "--inject %s: '@%s' is not a session number in 0..1000000", spec,
                       at);
    inj->first = (int)f;
    if (!slash) return LG_OK;
    long e = strtol(slash, &end, 10);
    if (end == slash || *end || errno || e < 1 || e > 1000000)
        return lg_fail(LG_EINVAL, "--inject %s: '/%s' is not a period in 1..1000000 sessions", spec,
                       slash);
    inj->every = (int)e;
    return LG_OK;
}

/* A size no machine of this one's kind could give is refused up front (exit 2), not left to
 * fail, or worse to pass, in the middle of a run. */
static int check_size(const char *spec, size_t bytes)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0) return LG_OK;
    double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
    char b1[32], b2[32];
    if ((double)bytes > have)
        return lg_fail(
            LG_EINVAL,
            "--inject %s: %s per session is more than this machine's memory and swap (%s)", spec,
            lg_fmt_bytes(b1, sizeof b1, (double)bytes), lg_fmt_bytes(b2, sizeof b2, have));
    return LG_OK;
}

int hx_inject_parse(const char *spec, struct hx_inject *inj)
{
    memset(inj, 0, sizeof *inj);
    inj->first = -1;
    inj->every = 1;
    inj->bytes = 1 << 20;
    char buf[96];
    if (lg_strlcpy(inj->spec, spec, sizeof inj->spec) || lg_strlcpy(buf, spec, sizeof buf))
        return lg_fail(LG_EINVAL, "--inject '%.40s...': too long", spec);
    char *at = strchr(buf, '@'), *colon = strchr(buf, ':');
    if (at) {
        *at++ = '\0';
        if (colon && colon > at)
            colon = NULL; /* a ':' after '@' is part of the session number: rejected there */
        if (parse_when(spec, at, inj)) return lg_errcode();
    }
    if (colon) {
        *colon++ = '\0';
        if (hx_parse_size(colon, &inj->bytes)) return lg_fail_ctx(LG_EINVAL, "--inject %s: ", spec);
    }
    if (fault_named(buf)) {
        lg_strlcpy(inj->name, buf, sizeof inj->name);
        if (colon && !sized(buf))
            return lg_fail(LG_EINVAL,
                           "--inject %s: only raw-malloc, raw-mmap and raw-noise take a size",
                           spec);
        if (sized(buf) && inj->bytes == 0)
            return lg_fail(LG_EINVAL, "--inject %s: give a size above 0 bytes", spec);
        return sized(buf) ? check_size(spec, inj->bytes) : LG_OK;
    }
    char list[400] = "";
    for (size_t i = 0; i < LG_ARRAY_LEN(faults); i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", faults[i].name);
    }
    return lg_fail(LG_EINVAL, "--inject: unknown fault '%s' (known: %s)", buf, list);
}

bool hx_inject_applies(const struct hx_options *o, const struct hx_inject *in, int index)
{
    int n_modes = __builtin_popcount((unsigned)o->modes);
    int first = in->first >= 0 ? in->first : o->warmup * (n_modes ? n_modes : 1);
    return index >= first && (index - first) % in->every == 0;
}

void hx_inject_faults(const struct hx_options *o, int index, struct tr_faults *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < o->n_inject; i++) {
        const struct hx_inject *in = &o->inject[i];
        if (!hx_inject_applies(o, in, index)) continue;
#define TR_FAULT_SET_FLAG(field) f->field = true
#define TR_FAULT_SET_SIZE(field) f->field += in->bytes
#define X(n_, f_, k_, r_, w_)                                                                      \
    if (!strcmp(in->name, n_)) TR_FAULT_SET_##k_(f_);
        TR_FAULTS(X)
#undef X
    }
}

size_t hx_inject_noise(const struct hx_options *o, int index)
{
    size_t bytes = 0;
    for (int i = 0; i < o->n_inject; i++)
        if (!strcmp(o->inject[i].name, "raw-noise") && hx_inject_applies(o, &o->inject[i], index))
            bytes += o->inject[i].bytes;
    return bytes;
}
