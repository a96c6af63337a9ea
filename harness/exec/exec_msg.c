/* exec_msg.c — a SESSION message from the agent (agent/lga_session.c writes it) into the
 * struct rpt_session that `run` would have made: the channels from the snapshot by the same
 * function `run` uses (hx_channels_from_snapshot), the generation's leak groups and unbalanced
 * references with their stacks symbolised through the child's memory map, the tag classes.
 *
 * A channel the program never used is not measured (RPT_NONE), never zero: tagged host bytes
 * without a tag scope, references without a tracked object, device channels without a device
 * allocation through the interposed calls.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "leakgate.h"

#define MAX_ITEMS 100000 /* groups, stacks, refs or retains in one message: more is malformed */
/* The most bytes (or blocks) one figure of a message may say: 16 TiB, more than any process
 * holds, and small enough that MAX_ITEMS of them summed stay far inside an int64_t. */
#define MAX_BYTES ((int64_t)1 << 44)

static void get_snapshot(struct lga_dec *d, struct trk_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->t = lga_get_f64(d);
    s->generation = lga_get_u32(d);
    if (lga_get_u32(d) != TRK_SNAPSHOT_NFIGURES) {
        d->bad = true;
        return;
    }
#define GET(field, kind) s->field = lga_get_i64(d);
    TRK_SNAPSHOT_FIGURES(GET)
#undef GET
}

/* Reads one element of an array into elem (zeroed): LG_OK, or LG_ENOMEM; a message that runs
 * short sets d->bad. */
typedef int (*get_elem_fn)(struct lga_dec *d, const struct hx_maps *maps, void *elem);

/* A count, then that many elements of `elem` bytes, each read by get_one, into a new array at
 * out (the address of the array's pointer; NULL for none), counted in *n. LG_EFORMAT past
 * MAX_ITEMS or when the message runs short. */
static int get_array(struct lga_dec *d, const struct hx_maps *maps, void *out, size_t elem, int *n,
                     get_elem_fn get_one)
{
    uint32_t count = lga_get_u32(d);
    if (d->bad || count > MAX_ITEMS) return LG_EFORMAT;
    char *v = count ? calloc(count, elem) : NULL;
    memcpy(out, &v, sizeof v);
    if (count && !v) return LG_ENOMEM;
    int rc = LG_OK;
    for (uint32_t i = 0; i < count && !d->bad && rc == LG_OK; i++) {
        ++*n; /* before it is read: a cleanup frees what a failed element holds */
        rc = get_one(d, maps, v + i * elem);
    }
    return rc == LG_OK && d->bad ? LG_EFORMAT : rc;
}

/* A raw stack from the message made readable, or as sent when there is no map or it cannot
 * be symbolised; NULL when empty. Freed by the caller. */
static char *get_stack(struct lga_dec *d, const struct hx_maps *maps)
{
    char *raw = lga_get_strdup(d);
    if (raw && !raw[0]) {
        free(raw);
        raw = NULL;
    }
    char *text = raw && maps ? hx_symbolize_text(maps, raw) : NULL;
    if (!text) return raw; /* as sent */
    free(raw);
    return text;
}

static int get_alloc_stack(struct lga_dec *d, const struct hx_maps *maps, void *elem)
{
    struct lg_stack *st = elem;
    st->count = lga_get_i64(d);
    st->frames = get_stack(d, maps);
    if (!st->frames && !d->bad && !(st->frames = strdup(""))) return LG_ENOMEM; /* no frames */
    return LG_OK;
}

static int get_group(struct lga_dec *d, const struct hx_maps *maps, void *elem)
{
    struct lg_leak_group *g = elem;
    lga_get_str(d, g->tag, sizeof g->tag);
    lg_strlcpy(g->space, lga_get_u32(d) == TRK_DEVICE ? "device" : "host", sizeof g->space);
    g->bytes = lga_get_i64(d);
    g->count = lga_get_i64(d);
    return get_array(d, maps, &g->stacks, sizeof *g->stacks, &g->n_stacks, get_alloc_stack);
}

static int get_retain(struct lga_dec *d, const struct hx_maps *maps, void *elem)
{
    struct lg_retain *rt = elem;
    lga_get_str(d, rt->site, sizeof rt->site);
    rt->generation = lga_get_u32(d);
    rt->stack = get_stack(d, maps);
    return LG_OK;
}

static int get_ref(struct lga_dec *d, const struct hx_maps *maps, void *elem)
{
    struct lg_ref_leak *r = elem;
    lga_get_str(d, r->kind, sizeof r->kind);
    lga_get_str(d, r->name, sizeof r->name);
    r->refs = (int)lga_get_u32(d);
    return get_array(d, maps, &r->retains, sizeof *r->retains, &r->n_retains, get_retain);
}

/* The leak groups, with their classes, then the unbalanced references. */
static int get_leaks(struct lga_dec *d, const struct hx_maps *maps, struct rpt_session *s)
{
    int rc = get_array(d, maps, &s->groups, sizeof *s->groups, &s->n_groups, get_group);
    if (rc == LG_OK && lg_leak_classes(s->groups, s->n_groups, &s->classes, &s->n_classes) != LG_OK)
        rc = LG_ENOMEM;
    if (rc == LG_OK) rc = get_array(d, maps, &s->refs, sizeof *s->refs, &s->n_refs, get_ref);
    return rc;
}

/* The program's notes (leakgate_session_note), at most LEAKGATE_NOTES_MAX. */
static int get_notes(struct lga_dec *d, struct rpt_session *s)
{
    uint32_t n = lga_get_u32(d);
    if (d->bad || n > LEAKGATE_NOTES_MAX) return LG_EFORMAT;
    if (n && !(s->notes = calloc(n, sizeof *s->notes))) return LG_ENOMEM;
    for (uint32_t i = 0; i < n && !d->bad; i++)
        if ((s->notes[s->n_notes] = lga_get_strdup(d))) s->n_notes++;
    return d->bad ? LG_EFORMAT : LG_OK;
}

/* The output line that ended the session, cut to fit buf (at a UTF-8 character's start): a
 * program's line may be as long as it likes, and the agent matches lines of up to 4 KiB. */
static void get_marker(struct lga_dec *d, char *buf, size_t size)
{
    char *line = lga_get_strdup(d);
    buf[0] = '\0';
    if (!line) return;
    size_t n = strlen(line);
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80) n--;
    }
    memcpy(buf, line, n);
    buf[n] = '\0';
    free(line);
}

/* A figure of the message: LG_OK when in [lo, MAX_BYTES], else LG_EFORMAT naming it. */
static int in_range(const char *what, int64_t v, int64_t lo)
{
    if (v >= lo && v <= MAX_BYTES) return LG_OK;
    if (lo == INT64_MIN)
        return lg_fail(LG_EFORMAT,
                       "a malformed session message from the agent: %s is %lld (at most %lld)",
                       what, (long long)v, (long long)MAX_BYTES);
    return lg_fail(LG_EFORMAT,
                   "a malformed session message from the agent: %s is %lld (expected %lld to "
                   "%lld)",
                   what, (long long)v, (long long)lo, (long long)MAX_BYTES);
}

/* A snapshot's figures: the ledger's counts, and readings where negative is "not measured". */
static int check_snapshot(const struct trk_snapshot *snap)
{
    int rc = LG_OK;
#define CHECK(field, kind)                                                                         \
    if (rc == LG_OK)                                                                               \
        rc = kind == TRK_LEDGER                                                                    \
                 ? in_range("a tracker ledger figure (" #field ")", snap->field, 0)                \
                 : in_range("a memory figure (" #field ")", snap->field, INT64_MIN);
    TRK_SNAPSHOT_FIGURES(CHECK)
#undef CHECK
    return rc;
}

/* What the agent's own counters can say, held against what was decoded: a program that writes
 * its own messages (or a broken agent) gets a refusal naming the figure, never a results file
 * the reader refuses or a sum that wraps. */
static int check_session(const struct rpt_session *s, const struct trk_snapshot *snap)
{
    int rc = check_snapshot(snap);
    if (rc == LG_OK) rc = in_range("the host peak", s->peak_tagged_host, 0);
    if (rc == LG_OK) rc = in_range("the device peak", s->peak_tagged_device, 0);
    if (rc == LG_OK) rc = in_range("the host bytes left", s->leaked_host_bytes, 0);
    if (rc == LG_OK) rc = in_range("the device bytes left", s->leaked_device_bytes, 0);
    for (int i = 0; i < s->n_groups && rc == LG_OK; i++) {
        const struct lg_leak_group *g = &s->groups[i];
        rc = in_range("a leak group's bytes", g->bytes, 0);
        if (rc == LG_OK) rc = in_range("a leak group's block count", g->count, 1);
        for (int k = 0; k < g->n_stacks && rc == LG_OK; k++)
            rc = in_range("a stack's block count", g->stacks[k].count, 0);
    }
    for (int i = 0; i < s->n_refs && rc == LG_OK; i++)
        rc = in_range("an object's reference count", s->refs[i].refs, 0);
    if (rc == LG_OK && !(s->duration_s >= 0 && s->duration_s < 1e9))
        rc = lg_fail(LG_EFORMAT,
                     "a malformed session message from the agent: a session of %g seconds",
                     s->duration_s);
    return rc;
}

/* Whether a census entry's figures can be: born in this image's sessions, after the previous
 * entry, not before the run's first session; exact counts in range. */
static int census_check(const struct rpt_session *s, const struct hx_exec_msg *m, uint32_t born,
                        int prev, int64_t bytes, int64_t blocks)
{
    if (born > (uint32_t)m->agent_index || (int)born <= prev)
        return lg_fail(LG_EFORMAT,
                       "a malformed session message from the agent: a census entry born in "
                       "session %u (this is its session %d; births come oldest first, once "
                       "each)",
                       born, m->agent_index);
    if (s->index - (m->agent_index - (int)born) < 0)
        return lg_fail(LG_EFORMAT,
                       "a malformed session message from the agent: a census entry born %d "
                       "sessions before the run's first",
                       m->agent_index - (int)born - s->index);
    int rc = in_range("a census entry's bytes", bytes, 1);
    if (rc == LG_OK) rc = in_range("a census entry's blocks", blocks, 1);
    if (rc == LG_OK && blocks > bytes)
        rc = lg_fail(LG_EFORMAT,
                     "a malformed session message from the agent: %lld census "
                     "blocks in %lld bytes",
                     (long long)blocks, (long long)bytes);
    return rc;
}

/* The census (after the flags; an agent that counts nothing sends state OFF): the blocks of each
 * session of this image still alive, its births told in the agent's indexes and turned into the
 * run's (index - agent_index + born). Counts are exact, so a figure out of range is a malformed
 * message, never clipped. An entry's frames are the raw stack of its largest big block when that
 * block holds at least half its bytes (hx_census_names symbolises them), else NULL. */
static int get_census(struct lga_dec *d, struct rpt_session *s, struct hx_exec_msg *m)
{
    uint32_t state = lga_get_u32(d);
    uint32_t n = lga_get_u32(d);
    if (d->bad || state > LGA_CENSUS_CAPPED || n > LGA_CENSUS_MAX_SLOTS ||
        (state == LGA_CENSUS_OFF && n))
        return lg_fail(LG_EFORMAT, "a malformed session message from the agent: its census");
    s->census_counted = state != LGA_CENSUS_OFF;
    m->census_capped = state == LGA_CENSUS_CAPPED;
    if (n && !(s->census = calloc(n, sizeof *s->census)))
        return lg_fail(LG_ENOMEM, "out of memory reading a session message");
    int prev = -1;
    for (uint32_t i = 0; i < n && !d->bad; i++) {
        uint32_t born = lga_get_u32(d);
        int64_t bytes = lga_get_i64(d), blocks = lga_get_i64(d), big = lga_get_i64(d);
        char *raw = lga_get_strdup(d);
        if (raw && (!raw[0] || big <= 0 || big > bytes || 2 * big < bytes)) {
            free(raw); /* none, or it holds less than half of what the session kept */
            raw = NULL;
        }
        int rc = d->bad ? LG_EFORMAT : census_check(s, m, born, prev, bytes, blocks);
        if (rc != LG_OK) {
            free(raw);
            if (d->bad) break;
            return rc;
        }
        prev = (int)born;
        s->census[s->n_census++] =
            (struct rpt_census){s->index - (m->agent_index - (int)born), bytes, blocks, raw};
    }
    return d->bad ? lg_fail(LG_EFORMAT, "a malformed session message from the agent: its census")
                  : LG_OK;
}

/* The exec meaning of each channel: not measured where the program never used it. */
static void channels(const struct trk_snapshot *snap, uint32_t used, int64_t n_refs, int64_t *abs)
{
    hx_channels_from_snapshot(snap, abs);
    if (!(used & LGA_USED_TAGS)) abs[RPT_CH_TAGGED_HOST] = RPT_NONE;
    if (!(used & LGA_USED_DEVICE_TAGS)) abs[RPT_CH_TAGGED_DEVICE] = RPT_NONE;
    abs[RPT_CH_REFS] = used & LGA_USED_REFS ? n_refs : RPT_NONE;
}

int hx_exec_decode_session(const unsigned char *p, size_t n, const char *maps_text,
                           struct rpt_session *s, struct hx_exec_msg *m)
{
    struct lga_dec d = {.p = p, .n = n};
    struct hx_maps maps;
    bool have_maps = maps_text && hx_maps_parse(&maps, maps_text) == LG_OK;
    struct trk_snapshot snap;
    memset(m, 0, sizeof *m);
    lg_strlcpy(s->mode, "exec", sizeof s->mode);
    s->train_loss = s->val_loss = s->quant_val_loss = NAN;
    for (int c = 0; c < RPT_NCHANNELS; c++) s->absolute[c] = s->delta[c] = m->begin[c] = RPT_NONE;
    m->agent_index = (int)lga_get_u32(&d);
    s->duration_s = lga_get_f64(&d);
    m->used = lga_get_u32(&d);
    get_snapshot(&d, &snap);
    s->peak_tagged_host = lga_get_i64(&d);
    s->peak_tagged_device = lga_get_i64(&d);
    s->leaked_host_bytes = lga_get_i64(&d);
    s->leaked_device_bytes = lga_get_i64(&d);
    int rc = d.bad ? LG_EFORMAT : get_leaks(&d, have_maps ? &maps : NULL, s);
    if (rc == LG_OK) {
        lga_get_str(&d, m->dump, sizeof m->dump);
        get_marker(&d, m->marker, sizeof m->marker);
        m->has_begin = lga_get_u32(&d) != 0;
        if (m->has_begin) {
            struct trk_snapshot begin;
            get_snapshot(&d, &begin);
            if (!d.bad && check_snapshot(&begin) != LG_OK) {
                if (have_maps) hx_maps_fini(&maps);
                return lg_errcode();
            }
            channels(&begin, m->used, 0, m->begin);
        }
        if (!d.bad) rc = get_notes(&d, s);
        if (rc == LG_OK && !d.bad && d.at < d.n) /* the flags, when the agent sends them */
            m->at_exit = (lga_get_u32(&d) & LGA_SESSION_AT_EXIT) != 0;
        if (rc == LG_OK && !d.bad && d.at < d.n) { /* the census, likewise */
            rc = get_census(&d, s, m);
            if (rc != LG_OK) {
                if (have_maps) hx_maps_fini(&maps);
                return rc;
            }
        }
        if (rc == LG_OK && !d.bad && d.at < d.n) rc = hx_keep_get(&d, &m->keep); /* likewise */
        if (d.bad) rc = LG_EFORMAT;
    }
    if (have_maps) hx_maps_fini(&maps);
    if (rc == LG_OK && check_session(s, &snap) != LG_OK) return lg_errcode();
    if (rc == LG_OK) channels(&snap, m->used, s->n_refs, s->absolute);
    if (rc == LG_EFORMAT) return lg_fail(rc, "a malformed session message from the agent");
    if (rc == LG_ENOMEM) return lg_fail(rc, "out of memory reading a session message");
    return rc;
}
