/* soak_plan.c — which session a soak (or one shard of it) runs next, and the parsing of the
 * soak's plan options: --presets, --duration, --shard. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_impl.h"

static int n_combos(const struct hx_soak_plan *p) { return p->n_presets * p->n_modes; }

int hx_soak_n_warmup(const struct hx_soak_plan *p) { return n_combos(p) * p->warmup; }

int hx_soak_shard_items(const struct hx_soak_plan *p)
{
    if (p->sessions <= 0) return -1;
    if (p->sessions <= p->shard) return 0;
    return (p->sessions - p->shard + p->n_shards - 1) / p->n_shards;
}

static void combo(const struct hx_soak_plan *p, int c, int *preset, int *mode)
{
    c %= n_combos(p);
    *preset = c / p->n_modes;
    *mode = hx_mode_at(p->modes, c % p->n_modes);
}

void hx_soak_combo_of(const struct hx_soak_plan *p, int index, int *preset, int *mode)
{
    int w = hx_soak_n_warmup(p);
    combo(p, index < w ? index : index - w, preset, mode);
}

bool hx_soak_session_at(const struct hx_soak_plan *p, int j, int *index, int *preset, int *mode,
                        bool *warmup)
{
    LG_ASSERT(j >= 0 && p->n_shards >= 1 && p->shard < p->n_shards && n_combos(p) > 0);
    int w = hx_soak_n_warmup(p);
    *warmup = j < w;
    if (*warmup) {
        *index = j;
        combo(p, j, preset, mode);
        return true;
    }
    long long item = p->shard + (long long)(j - w) * p->n_shards;
    if (p->sessions > 0 && item >= p->sessions) return false;
    if (item > 2000000000LL - w) return false; /* an index must fit an int */
    *index = w + (int)item;
    combo(p, (int)item, preset, mode);
    return true;
}

int hx_parse_shard(const char *s, int *i, int *n)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/' || errno) goto bad;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || *end || errno) goto bad;
    if (b < 1 || b > 1000 || a < 0 || a >= b)
        return lg_fail(LG_EINVAL,
                       "--shard %s: need 0 <= i < n <= 1000 (shards are numbered from 0)", s);
    *i = (int)a;
    *n = (int)b;
    return LG_OK;
bad:
    return lg_fail(LG_EINVAL, "--shard: '%s' is not i/n (e.g. 0/4 for the first of four shards)",
                   s);
}

int hx_parse_duration(const char *s, double *seconds)
{
    double total = 0;
    const char *p = s;
    if (!*p) goto bad;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v >= 0) || !isfinite(v)) goto bad;
        double mult = 1;
        switch (*end) {
        case 's':
            mult = 1;
            end++;
            break;
        case 'm':
            mult = 60;
            end++;
            break;
        case 'h':
            mult = 3600;
            end++;
            break;
        case 'd':
            mult = 86400;
            end++;
            break;
        case '\0':
            if (p != s) goto bad;
            break; /* a bare number is seconds, alone only */
        default: goto bad;
        }
        total += v * mult;
        p = end;
    }
    if (!(total >= 1) || total > 30 * 86400.0)
        return lg_fail(LG_EINVAL, "--duration %s: give between 1 s and 30 days", s);
    *seconds = total;
    return LG_OK;
bad:
    return lg_fail(LG_EINVAL, "--duration: '%s' is not a duration (e.g. 90s, 30m, 8h, 1h30m)", s);
}

int hx_parse_presets(const char *s, struct hx_soak_plan *p)
{
    char buf[160];
    if (lg_strlcpy(buf, s, sizeof buf))
        return lg_fail(LG_EINVAL, "--presets: '%.40s...' is too long", s);
    p->n_presets = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (p->n_presets == HX_SOAK_MAX_PRESETS)
            return lg_fail(LG_EINVAL, "--presets %s: at most %d presets", s, HX_SOAK_MAX_PRESETS);
        struct tft_config cfg;
        if (tft_config_preset(&cfg, tok) != LG_OK) return lg_fail_ctx(LG_EINVAL, "--presets: ");
        for (int i = 0; i < p->n_presets; i++)
            if (!strcmp(p->presets[i], tok))
                return lg_fail(LG_EINVAL, "--presets %s: '%s' is listed twice", s, tok);
        lg_strlcpy(p->presets[p->n_presets++], tok, sizeof p->presets[0]);
    }
    if (!p->n_presets) return lg_fail(LG_EINVAL, "--presets: name at least one preset");
    return LG_OK;
}

void hx_soak_presets_string(const struct hx_soak_plan *p, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < p->n_presets; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s%s", i ? "," : "", p->presets[i]);
    }
}
