/* suppress.c — suppression rules (gate.h): a strict reader of the rules file, naming file:line
 * for anything it does not take, and the matcher that records, per session, what each rule took
 * out of the exact channels (tagged bytes, shared objects) and what an expired rule would have. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gate.h"
#include "rpt_stacks.h"
#include "summary.h"

#define MAX_RULES_FILE (4u << 20) /* a rules file is a few KiB; more is not one */

/* ---- reading ------------------------------------------------------------------------------ */

struct cursor {
    const char *path;
    int line;
    char *p; /* into the line being read (a modifiable copy) */
};

static int fail_at(const struct cursor *c, const char *what, const char *arg)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s%s%s%s", c->path, c->line, what, arg ? " '" : "",
                   arg ? arg : "", arg ? "'" : "");
}

static void skip_space(struct cursor *c)
{
    while (*c->p == ' ' || *c->p == '\t') c->p++;
}

/* The next token: "quoted" (\" and \\ escaped) or up to white space. NULL at the end. */
static int next_token(struct cursor *c, char **tok)
{
    skip_space(c);
    *tok = NULL;
    if (!*c->p) return LG_OK;
    if (*c->p != '"') {
        *tok = c->p;
        while (*c->p && *c->p != ' ' && *c->p != '\t') c->p++;
        if (*c->p) *c->p++ = '\0';
        return LG_OK;
    }
    char *out = ++c->p;
    *tok = out;
    for (; *c->p && *c->p != '"'; c->p++) {
        if (*c->p == '\\' && (c->p[1] == '"' || c->p[1] == '\\')) c->p++;
        *out++ = *c->p;
    }
    if (*c->p != '"') return fail_at(c, "unterminated quote", NULL);
    c->p++;
    if (*c->p && *c->p != ' ' && *c->p != '\t')
        return fail_at(c, "white space expected after the closing quote", NULL);
    *out = '\0';
    return LG_OK;
}

static bool valid_date(const char *s)
{
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-') return false;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9')) return false;
    int y = atoi(s), m = atoi(s + 5), d = atoi(s + 8);
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (m < 1 || m > 12 || d < 1) return false;
    return d <= days[m - 1] && !(m == 2 && d == 29 && !leap);
}

/* key=value options after the glob; reason= takes the rest of the line. */
static int parse_options(struct cursor *c, struct rpt_rule *r)
{
    bool have_allow = false;
    for (;;) {
        skip_space(c);
        if (!*c->p) break;
        if (!strncmp(c->p, "reason=", 7)) {
            char *v = c->p + 7, *end = v + strlen(v);
            while (end > v && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
            if (!*v) return fail_at(c, "reason= is empty: say why the leak is allowed", NULL);
            if (lg_strlcpy(r->reason, v, sizeof r->reason))
                return fail_at(c, "reason longer than 199 bytes", NULL);
            break;
        }
        char *tok;
        int rc = next_token(c, &tok);
        if (rc != LG_OK) return rc;
        char *eq = strchr(tok, '=');
        if (!eq) return fail_at(c, "expected KEY=VALUE (allow, expires, reason), not", tok);
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(tok, "allow")) {
            size_t bytes;
            if (have_allow) return fail_at(c, "allow= given twice", NULL);
            if (lg_parse_size(v, &bytes) != LG_OK)
                return lg_fail_ctx(LG_EFORMAT, "%s:%d: allow=: ", c->path, c->line);
            if (bytes == 0)
                return fail_at(c, "allow=0 suppresses nothing: leave the rule out", NULL);
            r->allow = (int64_t)bytes;
            have_allow = true;
        } else if (!strcmp(tok, "expires")) {
            if (r->expires[0]) return fail_at(c, "expires= given twice", NULL);
            if (!valid_date(v)) return fail_at(c, "expires= is not a date YYYY-MM-DD:", v);
            lg_strlcpy(r->expires, v, sizeof r->expires);
        } else {
            return fail_at(c, "unknown key (allow, expires, reason):", tok);
        }
    }
    if (!r->expires[0]) return fail_at(c, "expires=YYYY-MM-DD missing: every rule ends", NULL);
    if (!r->reason[0]) return fail_at(c, "reason= missing: say why the leak is allowed", NULL);
    return LG_OK;
}

/* One rule from a line that is neither blank nor a comment. */
static int parse_rule(struct cursor *c, struct rpt_suppressions *s)
{
    char *kind, *glob;
    struct rpt_rule r = {.line = c->line, .allow = -1};
    int rc = next_token(c, &kind);
    if (rc == LG_OK && strcmp(kind, "tag") != 0 && strcmp(kind, "frame") != 0)
        return fail_at(c, "unknown rule kind (tag, frame):", kind);
    r.kind = !strcmp(kind, "tag") ? RPT_RULE_TAG : RPT_RULE_FRAME;
    if (rc == LG_OK) rc = next_token(c, &glob);
    if (rc != LG_OK) return rc;
    if (!glob || !*glob) return fail_at(c, "the rule has no glob", NULL);
    if (lg_strlcpy(r.glob, glob, sizeof r.glob))
        return fail_at(c, "glob longer than 159 bytes", NULL);
    if ((rc = parse_options(c, &r)) != LG_OK) return rc;
    for (int i = 0; i < s->n; i++)
        if (s->rules[i].kind == r.kind && !strcmp(s->rules[i].glob, r.glob)) {
            char what[64];
            snprintf(what, sizeof what, "the same %s glob as line %d:", kind, s->rules[i].line);
            return fail_at(c, what, r.glob);
        }
    if (s->n == RPT_MAX_RULES) return fail_at(c, "more than 64 rules", NULL);
    r.expired = strcmp(r.expires, s->today) < 0;
    s->rules[s->n++] = r;
    return LG_OK;
}

static int set_today(struct rpt_suppressions *s, const char *today)
{
    if (today) {
        if (!valid_date(today)) return lg_fail(LG_EINVAL, "'%s' is not a date YYYY-MM-DD", today);
        lg_strlcpy(s->today, today, sizeof s->today);
        return LG_OK;
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(s->today, sizeof s->today, "%Y-%m-%d", &tm);
    return LG_OK;
}

int rpt_suppressions_parse(struct rpt_suppressions *s, const char *path, const char *text,
                           size_t len, const char *today)
{
    memset(s, 0, sizeof *s);
    int rc = set_today(s, today);
    if (rc == LG_OK && lg_strlcpy(s->file, path, sizeof s->file))
        rc = lg_fail(LG_EINVAL, "%.80s...: path too long", path);
    char line[RPT_MAX_RULE_LINE + 1];
    struct cursor c = {.path = path};
    for (size_t at = 0; rc == LG_OK && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        c.line++;
        if (n > RPT_MAX_RULE_LINE) return fail_at(&c, "line longer than 1024 bytes", NULL);
        if (memchr(text + at, '\0', n)) return fail_at(&c, "a NUL byte: not a rules file", NULL);
        memcpy(line, text + at, n);
        line[n] = '\0';
        at += n + 1;
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = '\0';
        c.p = line;
        skip_space(&c);
        if (*c.p && *c.p != '#') rc = parse_rule(&c, s);
    }
    return rc;
}

int rpt_suppressions_load(struct rpt_suppressions *s, const char *path, const char *today)
{
    FILE *f = NULL;
    int rc = lg_open_read(&f, path, "suppressions");
    if (rc != LG_OK) return rc;
    char *text = malloc(MAX_RULES_FILE + 1);
    size_t n = text ? fread(text, 1, MAX_RULES_FILE + 1, f) : 0;
    if (!text)
        rc = lg_fail(LG_ENOMEM, "%s: out of memory", path);
    else if (ferror(f))
        rc = lg_fail(LG_EIO, "%s: cannot read the suppressions: %s", path, strerror(errno));
    else if (n > MAX_RULES_FILE)
        rc = lg_fail(LG_EFORMAT, "%s: larger than 4 MiB: not a rules file", path);
    if (rc == LG_OK) rc = rpt_suppressions_parse(s, path, text, n, today);
    free(text);
    fclose(f);
    return rc;
}

const char *rpt_rule_name(const struct rpt_suppressions *s, const struct rpt_rule *r, char *buf,
                          size_t size)
{
    snprintf(buf, size, "%s:%d", s->file, r->line);
    return buf;
}

const struct rpt_rule *rpt_rule_at(const struct rpt_suppressions *s, int line)
{
    for (int i = 0; i < s->n; i++)
        if (s->rules[i].line == line) return &s->rules[i];
    return NULL;
}

/* ---- matching ----------------------------------------------------------------------------- */

/* Whether glob matches a frame: the whole "func (file:line)", or the function alone. */
static bool frame_matches(const char *glob, const char *frame, size_t n)
{
    char buf[512];
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, frame, n);
    buf[n] = '\0';
    if (fnmatch(glob, buf, 0) == 0) return true;
    rpt_frame_function(frame, n, buf, sizeof buf);
    return fnmatch(glob, buf, 0) == 0;
}

/* Whether glob matches any frame of a list, one frame a line. */
static bool frames_match(const char *glob, const char *frames)
{
    for (const char *p = frames; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && frame_matches(glob, p, n)) return true;
        p = nl ? nl + 1 : p + n;
    }
    return false;
}

static bool group_matches(const struct rpt_rule *r, const struct lg_leak_group *g)
{
    if (r->kind == RPT_RULE_TAG) return fnmatch(r->glob, g->tag, 0) == 0;
    for (int k = 0; k < g->n_stacks; k++)
        if (frames_match(r->glob, g->stacks[k].frames)) return true;
    return false;
}

static bool object_matches(const struct rpt_rule *r, const struct lg_ref_leak *o, const char *name)
{
    if (r->kind == RPT_RULE_TAG) return fnmatch(r->glob, name, 0) == 0;
    for (int k = 0; k < o->n_retains; k++)
        if (frames_match(r->glob, o->retains[k].site) || frames_match(r->glob, o->retains[k].stack))
            return true;
    return false;
}

/* The first rule, not expired, that matches; else the first expired one; else -1. */
static int first_match(const struct rpt_suppressions *sup, const struct lg_leak_group *g,
                       const struct lg_ref_leak *o, const char *name)
{
    int expired = -1;
    for (int i = 0; i < sup->n; i++) {
        const struct rpt_rule *r = &sup->rules[i];
        bool m = g ? group_matches(r, g) : object_matches(r, o, name);
        if (m && !r->expired) return i;
        if (m && expired < 0) expired = i;
    }
    return expired;
}

int rpt_suppress_session(const struct rpt_suppressions *sup, struct rpt_session *s,
                         int64_t since[2], rpt_usable_fn usable)
{
    int64_t used[RPT_MAX_RULES] = {0}, seen[2] = {0, 0};
    int cap = s->n_groups + s->n_refs, n = 0;
    struct rpt_suppressed *v = cap ? calloc((size_t)cap, sizeof *v) : NULL;
    if (cap && !v) return lg_fail(LG_ENOMEM, "out of memory matching suppression rules");
    for (int i = 0; i < s->n_groups; i++) {
        const struct lg_leak_group *g = &s->groups[i];
        int k = first_match(sup, g, NULL, NULL);
        if (k < 0) continue;
        const struct rpt_rule *r = &sup->rules[k];
        struct rpt_suppressed *x = &v[n++];
        lg_strlcpy(x->name, g->tag, sizeof x->name);
        lg_strlcpy(x->space, g->space, sizeof x->space);
        x->rule = r->line;
        x->expired = r->expired;
        int64_t take = r->allow < 0 ? g->bytes : LG_MIN(g->bytes, r->allow - used[k]);
        x->bytes = r->expired ? 0 : take;
        x->over = r->expired ? g->bytes : g->bytes - take; /* expired: all of it still leaks */
        used[k] += x->bytes;
        /* what the statistical channels see of it: the allocator's bytes, in proportion */
        int64_t alloc = g->usable > 0            ? g->usable
                        : usable && g->count > 0 ? usable(g->bytes, g->count)
                                                 : g->bytes;
        if (g->bytes > 0)
            seen[!strcmp(g->space, "device")] +=
                (int64_t)((double)alloc * (double)x->bytes / (double)g->bytes);
    }
    for (int i = 0; i < s->n_refs; i++) {
        struct rpt_suppressed *x = &v[n];
        snprintf(x->name, sizeof x->name, "%s/%s", s->refs[i].kind, s->refs[i].name);
        int k = first_match(sup, NULL, &s->refs[i], x->name);
        if (k < 0) continue;
        x->object = true;
        x->rule = sup->rules[k].line;
        x->expired = sup->rules[k].expired;
        n++;
    }
    free(s->suppressed);
    s->suppressed = v;
    s->n_suppressed = n;
    for (int sp = 0; sp < 2 && !s->warmup; sp++) {
        since[sp] += seen[sp];
        s->suppressed_since[sp] = since[sp];
    }
    return LG_OK;
}

void rpt_rule_use_of(const struct rpt_results *r, int line, struct rpt_rule_use *u)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        bool took = false, expired_session = false;
        for (int k = 0; k < s->n_suppressed; k++) {
            const struct rpt_suppressed *x = &s->suppressed[k];
            if (x->rule != line) continue;
            if (x->expired) {
                u->expired_hit++;
                u->expired_bytes += x->over;
                expired_session = true;
                continue;
            }
            took = true;
            u->bytes += x->bytes;
            u->over += x->over;
            u->objects += x->object;
        }
        u->sessions += took;
        u->expired_sessions += expired_session;
    }
}
