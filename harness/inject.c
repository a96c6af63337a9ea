/* inject.c — `--inject NAME[:SIZE][@FIRST]`: which known leak class to re-create, how much per
 * session (the untagged classes) and from which session on, so detection limits can be
 * measured ("raw-malloc:256KiB@40" leaks 256 KiB of untagged malloc in every session from
 * session 40). Each name maps to a switch inside the trainer's real code path (trainer.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"

static const char *const names[] = {
    "varmap-dup-ref",   /* the original bug: the trainer's own VarMap reference */
    "adam-state",       /* optimizer state outlives the trainer */
    "grad-retained",    /* gradients kept for a norm report */
    "tape-retained",    /* the last step's tape kept for debugging */
    "ckpt-buffer",      /* checkpoint verification staging buffer */
    "int8-calibration", /* PTQ calibration statistics */
    "qat-observer",     /* QAT observers */
    "device-tensor",    /* a device buffer outliving its session (CUDA) */
    "raw-malloc",       /* untagged malloc: only jemalloc's allocated sees it */
    "raw-mmap",         /* anonymous mmap outside the allocator: only RSS sees it */
    NULL};

const char *const *hx_inject_names(void) { return names; }

int hx_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || !isfinite(v))
        return lg_fail(LG_EINVAL, "'%s' is not a size (e.g. 4096, 256KiB, 1.5MiB)", s);
    while (*end == ' ') end++;
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},         {"b", 1},           {"k", 1024},     {"kib", 1024},
                 {"kb", 1000},    {"m", 1048576},     {"mib", 1048576}, {"mb", 1e6},
                 {"g", 1073741824}, {"gib", 1073741824}, {"gb", 1e9}};
    for (size_t i = 0; i < LG_ARRAY_LEN(units); i++)
        if (strcasecmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 1e15) return lg_fail(LG_EINVAL, "size '%s' is too large", s);
            *out = (size_t)llround(b);
            return LG_OK;
        }
    return lg_fail(LG_EINVAL, "'%s': unknown size unit '%s' (use B, KiB, MiB, GiB)", s, end);
}

int hx_inject_parse(const char *spec, struct hx_inject *inj)
{
    memset(inj, 0, sizeof *inj);
    lg_strlcpy(inj->spec, spec, sizeof inj->spec);
    inj->first = -1;
    inj->bytes = 1 << 20;
    char buf[96];
    if (lg_strlcpy(buf, spec, sizeof buf)) return lg_fail(LG_EINVAL, "--inject '%.40s...': too long", spec);
    char *at = strchr(buf, '@'), *colon = strchr(buf, ':');
    if (at) {
        *at++ = '\0';
        char *end;
        long f = strtol(at, &end, 10);
        if (end == at || *end || f < 0 || f > 1000000)
            return lg_fail(LG_EINVAL, "--inject %s: '@%s' is not a session number", spec, at);
        inj->first = (int)f;
    }
    if (colon) {
        *colon++ = '\0';
        if (hx_parse_size(colon, &inj->bytes)) return lg_fail_ctx(LG_EINVAL, "--inject %s: ", spec);
    }
    for (const char *const *n = names; *n; n++)
        if (strcmp(buf, *n) == 0) {
            lg_strlcpy(inj->name, buf, sizeof inj->name);
            if (colon && strcmp(buf, "raw-malloc") != 0 && strcmp(buf, "raw-mmap") != 0)
                return lg_fail(LG_EINVAL, "--inject %s: only raw-malloc and raw-mmap take a size", spec);
            return LG_OK;
        }
    char list[400] = "";
    for (const char *const *n = names; *n; n++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", *n);
    }
    return lg_fail(LG_EINVAL, "--inject: unknown fault '%s' (known: %s)", buf, list);
}

void hx_inject_faults(const struct hx_options *o, int index, struct tr_faults *f)
{
    memset(f, 0, sizeof *f);
    int n_modes = __builtin_popcount((unsigned)o->modes);
    int first_measured = o->warmup * (n_modes ? n_modes : 1);
    for (int i = 0; i < o->n_inject; i++) {
        const struct hx_inject *in = &o->inject[i];
        int first = in->first >= 0 ? in->first : first_measured;
        if (index < first) continue;
        const char *n = in->name;
        if (!strcmp(n, "varmap-dup-ref")) f->varmap_dup_ref = true;
        else if (!strcmp(n, "adam-state")) f->adam_state = true;
        else if (!strcmp(n, "grad-retained")) f->grad_retained = true;
        else if (!strcmp(n, "tape-retained")) f->tape_retained = true;
        else if (!strcmp(n, "ckpt-buffer")) f->ckpt_buffer = true;
        else if (!strcmp(n, "int8-calibration")) f->int8_calibration = true;
        else if (!strcmp(n, "qat-observer")) f->qat_observer = true;
        else if (!strcmp(n, "device-tensor")) f->device_tensor = true;
        else if (!strcmp(n, "raw-malloc")) f->raw_malloc += in->bytes;
        else if (!strcmp(n, "raw-mmap")) f->raw_mmap += in->bytes;
    }
}
