/* test_results_io.c — the results file: writer → loader round trip of every field, lines on
 * disk as soon as they are written, a run cut short anywhere, malformed input naming file,
 * line and member, name tables, and every line valid against docs/results.schema.json. */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"
#include "lg_test_rpt.h"
#include "results_json.h"
#include "rpt_text.h"
#include "summary.h"

TestSuite(results_io, .init = lg_test_setup, .fini = lg_test_teardown);

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *fixture(const char *name) { return lg_test_datafile("results", name); }

static bool same_num(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* ---- a run with every field set to something distinctive ------------------------------------- */

static void fill_run(struct rpt_run *run)
{
    memset(run, 0, sizeof *run);
    strcpy(run->schema, RPT_SCHEMA);
    strcpy(run->version, "0.1.0-test");
    strcpy(run->command, "soak");
    strcpy(run->started, "2026-11-30T01:02:03Z");
    strcpy(run->hostname, "höst-Ω");
    run->cpus = 16;
    run->mem_bytes = 137438953472LL;
    strcpy(run->device, "cuda: NVIDIA H200");
    strcpy(run->blas, "OpenBLAS 0.3.21");
    strcpy(run->blas_core, "SkylakeX");
    strcpy(run->blas_path, "cpu-features");
    strcpy(run->preset, "full");
    strcpy(run->modes, "fp32,int8,qat");
    run->sessions = 2;
    run->warmup = 1;
    run->steps = 50;
    run->seed = 18446744073709551615ULL; /* above INT64_MAX: written as a string */
    run->stacks = true;
    strcpy(run->inject, "raw-malloc:256KiB@40");
    strcpy(run->shard, "2/4");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        run->budgets[c].band = 1000.5 * c;
        run->budgets[c].slope = 0.1 + c;
        run->budgets[c].floor = c == 2 ? NAN : 3e9 + c;
        snprintf(run->budgets[c].source, sizeof run->budgets[c].source, "source of %d", c);
    }
}

static void fill_session(struct rpt_session *s, int index, bool warmup)
{
    memset(s, 0, sizeof *s);
    s->index = index;
    strcpy(s->mode, index % 2 ? "int8" : "fp32");
    s->warmup = warmup;
    s->duration_s = 1.25 + index;
    s->steps = 50;
    s->train_loss = 0.12345678901234567;
    s->val_loss = NAN;
    s->quant_val_loss = 1e-300;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        s->absolute[c] = c == RPT_CH_DEV_PROCESS ? RPT_NONE : ((int64_t)1 << 40) + c * 7 + index;
        /* one baseline: absolute − delta is the same in every measured session */
        s->delta[c] = warmup ? RPT_NONE : -(int64_t)c * 4096 + index;
    }
    s->delta[RPT_CH_RSS] = warmup ? RPT_NONE : INT64_MAX;
    if (!warmup) s->absolute[RPT_CH_RSS] = INT64_MAX;
    s->peak_tagged_host = 987654321;
    s->peak_tagged_device = RPT_NONE;
    s->leaked_host_bytes = 3317760 + index;
    s->leaked_device_bytes = 0;
    s->invalid_frees = index == 1 ? 2 : 0;
    s->n_groups = 2;
    s->groups = calloc(2, sizeof *s->groups);
    lg_test_leak_group(
        &s->groups[0], "varmap/enc_lstm.w_ih", "host", 262144, 1, 2, (int64_t[]){3, 1},
        (const char *[]){"vm_tensor_new (model/varmap.c:77)\ntft_new (model/tft.c:120)",
                         "main (harness/main.c:57)"});
    lg_test_leak_group(&s->groups[1], "act/dec.attn.scores", "device", 4194304, 2, 0, NULL, NULL);
    s->n_refs = 1;
    s->refs = calloc(1, sizeof *s->refs);
    strcpy(s->refs[0].kind, "varmap");
    strcpy(s->refs[0].name, "tft.varmap");
    s->refs[0].refs = 2;
    s->refs[0].n_retains = 2;
    s->refs[0].retains = calloc(2, sizeof *s->refs[0].retains);
    strcpy(s->refs[0].retains[0].site, "trainer_new (model/trainer.c:142)");
    s->refs[0].retains[0].generation = 4000000000u;
    s->refs[0].retains[0].stack =
        strdup("vm_retain (model/varmap.c:210)\ntrainer_new (model/trainer.c:142)");
    strcpy(s->refs[0].retains[1].site, "ckpt_save (model/ckpt.c:9)");
    s->refs[0].retains[1].generation = 2;
    s->n_classes = 2;
    s->classes = calloc(2, sizeof *s->classes);
    strcpy(s->classes[0].cls, "varmap");
    s->classes[0].bytes = 262144;
    strcpy(s->classes[1].cls, "act");
    s->classes[1].bytes = 4194304;
    s->n_samples = 3;
    s->samples = calloc(3, sizeof *s->samples);
    s->samples[0] = lg_test_sample(-1, "build", 0.0, 100, RPT_NONE, 200, 300);
    s->samples[1] = lg_test_sample(1, "train", 0.0215, 1000, 2000, 3000, 4000);
    s->samples[2] = lg_test_sample(-1, "free", NAN, RPT_NONE, RPT_NONE, RPT_NONE, RPT_NONE);
    if (index == 2) strcpy(s->error, "checkpoint write failed: \"disk full\"\nat save");
}

static void fill_verdict(struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->status = RPT_LEAK;
    v->exit_code = 1;
    v->sessions_measured = 2;
    v->partial = true;
    strcpy(v->summary, "LEAK on tagged_host: 3.16 MiB per session");
    v->n_channels = RPT_NCHANNELS;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_channel_verdict *cv = &v->channels[c];
        cv->channel = (enum rpt_channel)(RPT_NCHANNELS - 1 - c); /* order is kept, whatever it is */
        cv->status = (enum rpt_status)(c % 6);
        cv->figure = c * 1.5;
        cv->budget = c == 3 ? NAN : 65536;
        cv->slope = 1.0 / (c + 1);
        cv->slope_lo = -0.25;
        cv->slope_hi = 1e12;
        cv->shift = c == 0 ? NAN : 7737344;
        snprintf(cv->why, sizeof cv->why, "why number %d", c);
    }
}

/* ---- field-by-field comparison, driven by tables --------------------------------------------- */

enum kind { K_INT, K_UNS, K_I64, K_U64, K_BOOL, K_NUM, K_STR, K_PSTR };

/* One field of a struct: name, place and type. K_STR is a char array, K_PSTR a char * (NULL
 * must stay NULL); K_NUM a double compared with NaN equal to NaN; K_INT also an enum. */
struct field {
    const char *name;
    size_t off;
    enum kind kind;
};
// clang-format off
#define FIELD(t, m, k) {.name = #m, .off = offsetof(t, m), .kind = k}
// clang-format on

/* Asserts that a and b agree on every field (what: the struct, for the message). */
static void check_fields(const void *a, const void *b, const struct field *f, size_t n,
                         const char *what)
{
    for (size_t i = 0; i < n; i++) {
        const char *x = (const char *)a + f[i].off, *y = (const char *)b + f[i].off;
        const char *name = f[i].name;
        switch (f[i].kind) {
        case K_INT: cr_assert_eq(*(const int *)x, *(const int *)y, "%s.%s", what, name); break;
        case K_UNS:
            cr_assert_eq(*(const unsigned *)x, *(const unsigned *)y, "%s.%s", what, name);
            break;
        case K_I64:
            cr_assert_eq(*(const int64_t *)x, *(const int64_t *)y, "%s.%s: %lld != %lld", what,
                         name, (long long)*(const int64_t *)x, (long long)*(const int64_t *)y);
            break;
        case K_U64:
            cr_assert_eq(*(const uint64_t *)x, *(const uint64_t *)y, "%s.%s: %llu != %llu", what,
                         name, (unsigned long long)*(const uint64_t *)x,
                         (unsigned long long)*(const uint64_t *)y);
            break;
        case K_BOOL: cr_assert_eq(*(const bool *)x, *(const bool *)y, "%s.%s", what, name); break;
        case K_NUM:
            cr_assert(same_num(*(const double *)x, *(const double *)y), "%s.%s: %.17g != %.17g",
                      what, name, *(const double *)x, *(const double *)y);
            break;
        case K_STR: cr_assert_str_eq(x, y, "%s.%s", what, name); break;
        case K_PSTR: {
            const char *sx = *(char *const *)x, *sy = *(char *const *)y;
            if (!sx)
                cr_assert_null(sy, "%s.%s", what, name);
            else
                cr_assert_str_eq(sx, sy, "%s.%s", what, name);
            break;
        }
        }
    }
}
#define CHECK_FIELDS(a, b, table, what) check_fields(a, b, table, LG_ARRAY_LEN(table), what)

#define R(m, k) FIELD(struct rpt_run, m, k)
static const struct field run_fields[] = {
    R(schema, K_STR),   R(version, K_STR), R(command, K_STR),   R(started, K_STR),
    R(hostname, K_STR), R(cpus, K_INT),    R(mem_bytes, K_I64), R(device, K_STR),
    R(preset, K_STR),   R(modes, K_STR),   R(sessions, K_INT),  R(warmup, K_INT),
    R(steps, K_INT),    R(seed, K_U64),    R(stacks, K_BOOL),   R(inject, K_STR),
    R(shard, K_STR),    R(blas, K_STR),    R(blas_core, K_STR), R(blas_path, K_STR),
};
#undef R
static const struct field budget_fields[] = {
    FIELD(struct rpt_budget, band, K_NUM),
    FIELD(struct rpt_budget, slope, K_NUM),
    FIELD(struct rpt_budget, floor, K_NUM),
    FIELD(struct rpt_budget, source, K_STR),
};
#define S(m, k) FIELD(struct rpt_session, m, k)
static const struct field session_fields[] = {
    S(index, K_INT),
    S(mode, K_STR),
    S(warmup, K_BOOL),
    S(duration_s, K_NUM),
    S(steps, K_INT),
    S(train_loss, K_NUM),
    S(val_loss, K_NUM),
    S(quant_val_loss, K_NUM),
    S(peak_tagged_host, K_I64),
    S(peak_tagged_device, K_I64),
    S(leaked_host_bytes, K_I64),
    S(leaked_device_bytes, K_I64),
    S(invalid_frees, K_I64),
    S(n_groups, K_INT),
    S(n_refs, K_INT),
    S(n_classes, K_INT),
    S(n_samples, K_INT),
    S(error, K_STR),
};
#undef S
static const struct field group_fields[] = {
    FIELD(struct lg_leak_group, tag, K_STR),      FIELD(struct lg_leak_group, space, K_STR),
    FIELD(struct lg_leak_group, bytes, K_I64),    FIELD(struct lg_leak_group, count, K_I64),
    FIELD(struct lg_leak_group, n_stacks, K_INT),
};
static const struct field stack_fields[] = {
    FIELD(struct lg_stack, count, K_I64),
    FIELD(struct lg_stack, frames, K_PSTR),
};
static const struct field ref_fields[] = {
    FIELD(struct lg_ref_leak, kind, K_STR),
    FIELD(struct lg_ref_leak, name, K_STR),
    FIELD(struct lg_ref_leak, refs, K_INT),
    FIELD(struct lg_ref_leak, n_retains, K_INT),
};
static const struct field retain_fields[] = {
    FIELD(struct lg_retain, site, K_STR),
    FIELD(struct lg_retain, generation, K_UNS),
    FIELD(struct lg_retain, stack, K_PSTR),
};
static const struct field class_fields[] = {
    FIELD(struct lg_class_bytes, cls, K_STR),
    FIELD(struct lg_class_bytes, bytes, K_I64),
};
#define M(m, k) FIELD(struct rpt_sample, m, k)
// clang-format off
static const struct field sample_fields[] = {
    M(step, K_INT), M(phase, K_STR), M(t, K_NUM), M(v[RPT_CH_TAGGED_HOST], K_I64),
    M(v[RPT_CH_TAGGED_DEVICE], K_I64), M(v[RPT_CH_JE_ALLOCATED], K_I64), M(v[RPT_CH_RSS], K_I64),
};
// clang-format on
#undef M
#define VD(m, k) FIELD(struct rpt_verdict, m, k)
static const struct field verdict_fields[] = {
    VD(status, K_INT),   VD(exit_code, K_INT), VD(sessions_measured, K_INT),
    VD(partial, K_BOOL), VD(summary, K_STR),   VD(n_channels, K_INT),
};
#undef VD
#define V(m, k) FIELD(struct rpt_channel_verdict, m, k)
static const struct field channel_fields[] = {
    V(channel, K_INT),  V(status, K_INT),   V(figure, K_NUM), V(budget, K_NUM), V(slope, K_NUM),
    V(slope_lo, K_NUM), V(slope_hi, K_NUM), V(shift, K_NUM),  V(why, K_STR),
};
#undef V

static void check_run(const struct rpt_run *a, const struct rpt_run *b)
{
    CHECK_FIELDS(a, b, run_fields, "run");
    for (int c = 0; c < RPT_NCHANNELS; c++)
        CHECK_FIELDS(&a->budgets[c], &b->budgets[c], budget_fields, rpt_channel_name(c));
}

static void check_session(const struct rpt_session *a, const struct rpt_session *b)
{
    CHECK_FIELDS(a, b, session_fields, "session");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        cr_assert_eq(a->absolute[c], b->absolute[c], "absolute[%s]", rpt_channel_name(c));
        cr_assert_eq(a->delta[c], b->delta[c], "delta[%s]", rpt_channel_name(c));
    }
    for (int g = 0; g < a->n_groups; g++) {
        const struct lg_leak_group *x = &a->groups[g], *y = &b->groups[g];
        CHECK_FIELDS(x, y, group_fields, "group");
        for (int k = 0; k < x->n_stacks; k++)
            CHECK_FIELDS(&x->stacks[k], &y->stacks[k], stack_fields, "stack");
    }
    for (int k = 0; k < a->n_refs; k++) {
        const struct lg_ref_leak *x = &a->refs[k], *y = &b->refs[k];
        CHECK_FIELDS(x, y, ref_fields, "ref");
        for (int t = 0; t < x->n_retains; t++)
            CHECK_FIELDS(&x->retains[t], &y->retains[t], retain_fields, "retain");
    }
    for (int k = 0; k < a->n_classes; k++)
        CHECK_FIELDS(&a->classes[k], &b->classes[k], class_fields, "class");
    for (int k = 0; k < a->n_samples; k++)
        CHECK_FIELDS(&a->samples[k], &b->samples[k], sample_fields, "sample");
}

static void check_verdict(const struct rpt_verdict *a, const struct rpt_verdict *b)
{
    CHECK_FIELDS(a, b, verdict_fields, "verdict");
    for (int k = 0; k < a->n_channels; k++)
        CHECK_FIELDS(&a->channels[k], &b->channels[k], channel_fields, "channel");
}

/* Writes run, three sessions and a verdict to path. */
static void write_sample(const char *path, struct rpt_run *run, struct rpt_session *s,
                         struct rpt_verdict *v)
{
    fill_run(run);
    for (int i = 0; i < 3; i++) fill_session(&s[i], i, i == 0);
    fill_verdict(v);
    struct rpt_writer *w = NULL;
    cr_assert_eq(rpt_writer_open(&w, path, run), LG_OK, "%s", lg_errmsg());
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rpt_writer_session(w, &s[i]), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(rpt_writer_verdict(w, v), LG_OK, "%s", lg_errmsg());
    rpt_writer_close(w);
}

/* ---- tests ---------------------------------------------------------------------------------- */

Test(results_io, write_then_load_keeps_every_field)
{
    struct rpt_run run;
    struct rpt_session s[3];
    struct rpt_verdict v;
    const char *path = lg_test_tmpfile("rt.jsonl");
    write_sample(path, &run, s, &v);

    char *text = lg_slurp(path, NULL);
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    cr_assert_eq(lines, 5, "one line per record: run, 3 sessions, verdict");
    cr_assert(strstr(text, "\"seed\":\"18446744073709551615\""),
              "a seed above INT64_MAX is a string");
    cr_assert(strstr(text, "\"val_loss\":null"), "NaN is null");
    cr_assert(strstr(text, "\"dev_process\":null"), "RPT_NONE is null");
    cr_assert(strstr(text, "\"bytes\":262144,"), "bytes are integers");
    free(text);

    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    check_run(&run, &r->run);
    cr_assert_eq(r->n_sessions, 3);
    for (int i = 0; i < 3; i++) check_session(&s[i], &r->sessions[i]);
    cr_assert(r->has_verdict);
    check_verdict(&v, &r->verdict);
    cr_assert_eq(r->truncated_lines, 0);
    rpt_results_free(r);
    for (int i = 0; i < 3; i++) rpt_session_fini(&s[i]);
    cr_assert_null(s[0].groups, "fini leaves the session empty");
    cr_assert_eq(s[0].n_groups, 0);
}

Test(results_io, each_line_is_on_disk_when_the_call_returns)
{
    struct rpt_run run;
    struct rpt_session s;
    fill_run(&run);
    fill_session(&s, 1, false);
    const char *path = lg_test_tmpfile("live.jsonl");
    struct rpt_writer *w = NULL;
    cr_assert_eq(rpt_writer_open(&w, path, &run), LG_OK);
    char *t = lg_slurp(path, NULL);
    cr_assert(t && strncmp(t, "{\"type\":\"run\"", 13) == 0 && strchr(t, '\n'),
              "run line written at open");
    free(t);
    cr_assert_eq(rpt_writer_session(w, &s), LG_OK);
    /* read it back while the writer is still open: a crash now would lose nothing */
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(r->n_sessions, 1);
    cr_assert_not(r->has_verdict);
    cr_assert_eq(r->truncated_lines, 0);
    rpt_results_free(r);
    rpt_writer_close(w);
    rpt_session_fini(&s);
}

Test(results_io, writer_open_failure_says_where)
{
    struct rpt_run run;
    fill_run(&run);
    struct rpt_writer *w = (struct rpt_writer *)&run; /* must be reset to NULL */
    int rc = rpt_writer_open(&w, "/nonexistent-dir/results.jsonl", &run);
    cr_assert_eq(rc, LG_EIO);
    cr_assert_null(w);
    cr_assert(strstr(lg_errmsg(), "/nonexistent-dir/results.jsonl"), "%s", lg_errmsg());
    rpt_writer_close(NULL);
}

Test(results_io, bytes_that_are_not_utf8_become_question_marks)
{
    struct rpt_run run;
    struct rpt_session s;
    fill_run(&run);
    fill_session(&s, 1, false);
    strcpy(s.groups[0].tag, "varmap/bad\xff\xc3(name");
    const char *path = lg_test_tmpfile("utf8.jsonl");
    struct rpt_writer *w = NULL;
    cr_assert_eq(rpt_writer_open(&w, path, &run), LG_OK);
    cr_assert_eq(rpt_writer_session(w, &s), LG_OK, "%s", lg_errmsg());
    rpt_writer_close(w);
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert_str_eq(r->sessions[0].groups[0].tag, "varmap/bad?"
                                                   "?(name");
    rpt_results_free(r);
    rpt_session_fini(&s);
}

Test(results_io, recorded_fixtures_load_with_their_verdicts)
{
    static const struct {
        const char *name;
        int sessions;
        bool verdict;
        enum rpt_status status;
        int truncated;
    } want[] = {
        {"clean.jsonl", 8, true, RPT_PASS, 0},   {"clean2.jsonl", 8, true, RPT_PASS, 0},
        {"leaking.jsonl", 8, true, RPT_LEAK, 0}, {"partial.jsonl", 5, false, RPT_PASS, 1},
        {"soak.jsonl", 101, true, RPT_LEAK, 0},  {"device.jsonl", 6, true, RPT_LEAK, 0},
    };
    for (size_t k = 0; k < LG_ARRAY_LEN(want); k++) {
        struct rpt_results *r = NULL;
        cr_assert_eq(rpt_results_load(&r, fixture(want[k].name)), LG_OK, "%s", lg_errmsg());
        cr_assert_eq(r->n_sessions, want[k].sessions, "%s", want[k].name);
        cr_assert_eq(r->has_verdict, want[k].verdict, "%s", want[k].name);
        cr_assert_eq(r->truncated_lines, want[k].truncated, "%s", want[k].name);
        if (want[k].verdict) cr_assert_eq(r->verdict.status, want[k].status, "%s", want[k].name);
        rpt_results_free(r);
    }
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, fixture("device.jsonl")), LG_OK);
    cr_assert_eq(r->sessions[2].leaked_device_bytes, 4 << 20);
    cr_assert_str_eq(r->sessions[2].groups[0].space, "device");
    cr_assert_neq(r->sessions[2].delta[RPT_CH_DEV_DRIVER], RPT_NONE);
    rpt_results_free(r);
    cr_assert_eq(rpt_results_load(&r, fixture("clean.jsonl")), LG_OK);
    cr_assert_eq(r->sessions[3].delta[RPT_CH_TAGGED_DEVICE], RPT_NONE,
                 "CPU run: device channels are null");
    cr_assert_eq(r->sessions[0].delta[RPT_CH_RSS], RPT_NONE, "warm-up: no delta");
    cr_assert_gt(r->sessions[3].n_samples, r->run.steps, "a sample per step plus phase marks");
    rpt_results_free(r);
}

Test(results_io, a_run_cut_short_anywhere_in_its_last_line_loads)
{
    size_t n;
    char *text = lg_slurp(fixture("leaking.jsonl"), &n);
    cr_assert_not_null(text);
    cr_assert_eq(text[n - 1], '\n');
    size_t verdict_start = n - 1, session_start;
    while (text[verdict_start - 1] != '\n') verdict_start--;
    session_start = verdict_start - 1;
    while (text[session_start - 1] != '\n') session_start--;
    const char *path = lg_test_tmpfile("cut.jsonl");
    size_t vlen = n - 1 - verdict_start, slen = verdict_start - 1 - session_start;
    /* cut inside the verdict line: 8 sessions, no verdict */
    size_t cuts[] = {1, 2, vlen / 3, vlen / 2, vlen - 1};
    for (size_t k = 0; k < LG_ARRAY_LEN(cuts); k++) {
        lg_spit(path, text, verdict_start + cuts[k]);
        struct rpt_results *r = NULL;
        cr_assert_eq(rpt_results_load(&r, path), LG_OK, "cut at %zu: %s", cuts[k], lg_errmsg());
        cr_assert_eq(r->n_sessions, 8);
        cr_assert_not(r->has_verdict);
        cr_assert_eq(r->truncated_lines, 1);
        rpt_results_free(r);
    }
    /* cut inside the last session line: 7 sessions */
    lg_spit(path, text, session_start + slen / 2);
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(r->n_sessions, 7);
    cr_assert_eq(r->truncated_lines, 1);
    rpt_results_free(r);
    /* cut exactly before the last newline: the record is complete */
    lg_spit(path, text, n - 1);
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert(r->has_verdict);
    cr_assert_eq(r->truncated_lines, 0);
    rpt_results_free(r);
    /* only a cut run line: nothing to report from */
    lg_spit(path, text, 40);
    cr_assert_eq(rpt_results_load(&r, path), LG_EFORMAT);
    cr_assert_null(r);
    cr_assert(strstr(lg_errmsg(), "no \"run\" line"), "%s", lg_errmsg());
    free(text);
}

/* Removes every member "name": VALUE from JSON text s, VALUE a scalar or a flat object (no
 * nested braces), with the comma after it: what a writer that did not know the member wrote. */
static int drop_member(char *s, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    int n = 0;
    for (char *p; (p = strstr(s, key)); n++) {
        char *e = p + strlen(key);
        e = *e == '{' ? strchr(e, '}') + 1 : e + strcspn(e, ",}");
        if (*e == ',') e++;
        memmove(p, e, strlen(e) + 1);
    }
    return n;
}

Test(results_io, a_channel_an_older_writer_did_not_know_loads_as_not_measured)
{
    /* adding a channel is a row in channels.h: files written before it lack the channel in
     * the budgets and in every session's absolute and delta, and still load */
    char *text = lg_slurp(fixture("leaking.jsonl"), NULL);
    cr_assert_not_null(text);
    struct rpt_results *full = NULL, *r = NULL;
    cr_assert_eq(rpt_results_load(&full, fixture("leaking.jsonl")), LG_OK, "%s", lg_errmsg());
    int dropped = drop_member(text, rpt_channel_name(RPT_CH_JE_ACTIVE));
    /* the budget, and absolute and delta in each session line */
    cr_assert_eq(dropped, 1 + 2 * full->n_sessions, "dropped %d members", dropped);
    const char *path = lg_test_tmpfile("older.jsonl");
    lg_spit(path, text, strlen(text));
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(r->n_sessions, full->n_sessions);
    for (int i = 0; i < r->n_sessions; i++) {
        cr_expect_eq(r->sessions[i].absolute[RPT_CH_JE_ACTIVE], RPT_NONE, "session %d", i);
        cr_expect_eq(r->sessions[i].delta[RPT_CH_JE_ACTIVE], RPT_NONE, "session %d", i);
        cr_expect_eq(r->sessions[i].absolute[RPT_CH_JE_ALLOCATED],
                     full->sessions[i].absolute[RPT_CH_JE_ALLOCATED], "the others are kept");
    }
    const struct rpt_budget *b = &r->run.budgets[RPT_CH_JE_ACTIVE];
    struct rpt_budget table;
    rpt_budget_resolution(RPT_CH_JE_ACTIVE, &table);
    cr_expect_not(b->measured);
    cr_expect(b->band == table.band && b->slope == table.slope && b->floor == table.floor);
    cr_expect(strstr(b->source, "before this channel"), "%s", b->source);
    rpt_results_free(r);
    rpt_results_free(full);
    free(text);
}

/* Replaces the first `from` in s with `to` (s has room). */
static void replace(char *s, const char *from, const char *to)
{
    char *p = strstr(s, from);
    cr_assert_not_null(p, "fixture text lacks %s", from);
    memmove(p + strlen(to), p + strlen(from), strlen(p + strlen(from)) + 1);
    memcpy(p, to, strlen(to));
}

Test(results_io, malformed_lines_are_errors_naming_file_line_and_member)
{
    size_t n;
    char *text = lg_slurp(fixture("clean.jsonl"), &n);
    cr_assert_not_null(text);
    /* the lines of the clean fixture: run, 8 sessions, verdict */
    char *line[10];
    int nl = 0;
    for (char *p = text; *p && nl < 10; nl++) {
        line[nl] = p;
        p = strchr(p, '\n');
        *p++ = '\0';
    }
    cr_assert_eq(nl, 10);
    char tag[300];
    memset(tag, 'x', 200);
    tag[200] = '\0';
    char too_long[400];
    snprintf(too_long, sizeof too_long, "\"tag\":\"%s\"", tag);
    static char b[65536];
    struct {
        char *body; /* the file: lines each ending with '\n' */
        int line;
        const char *what;
    } cases[20];
    int nc = 0;
#define CASE(LINE, WHAT, ...)                                                                      \
    do {                                                                                           \
        snprintf(b, sizeof b, __VA_ARGS__);                                                        \
        cases[nc++] = (typeof(cases[0])){strdup(b), LINE, WHAT};                                   \
    } while (0)
    CASE(2, "not JSON", "%s\ngarbage\n%s\n", line[0], line[1]);
    CASE(2, "not JSON", "%s\ngarbage\n", line[0]); /* a complete last line is not a truncation */
    CASE(2, "not JSON", "%s\n%.100s\n%s\n", line[0], line[1],
         line[2]); /* a cut line in the middle */
    CASE(1, "before the \"run\" line", "%s\n%s\n", line[1], line[0]);
    CASE(2, "a second \"run\" line", "%s\n%s\n", line[0], line[0]);
    CASE(3, "after the \"verdict\" line", "%s\n%s\n%s\n", line[0], line[9], line[1]);
    CASE(2, "unknown record type \"bogus\"", "%s\n{\"type\":\"bogus\"}\n", line[0]);
    CASE(2, "not JSON", "%s\n{\"type\":\"session\",\"type\":\"session\"}\n",
         line[0]); /* duplicate key */
    /* the rest edit a copy of a line */
    char edit[65536];
    snprintf(edit, sizeof edit, "%s", line[3]);
    replace(edit, "\"steps\":12", "\"steps\":12.5");
    CASE(2, "session.steps: expected an integer", "%s\n%s\n", line[0], edit);
    snprintf(edit, sizeof edit, "%s", line[3]);
    replace(edit, "\"delta\":", "\"delte\":");
    CASE(2, "session.delta: missing", "%s\n%s\n", line[0], edit);
    snprintf(edit, sizeof edit, "%s", line[9]);
    replace(edit, "\"channel\":\"rss\"", "\"channel\":\"rsss\"");
    CASE(10, "verdict.channels[6].channel: unknown channel",
         "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", line[0], line[1], line[2], line[3], line[4],
         line[5], line[6], line[7], line[8], edit);
    snprintf(edit, sizeof edit, "%s", line[0]);
    replace(edit, "leakgate.results/1", "leakgate.results/2");
    CASE(1, "run.schema: not \"leakgate.results/1\"", "%s\n", edit);
    /* session indices that rise by one, then a duplicate, a restart, a warm-up after a
     * measured session; a delta that contradicts its absolute figure */
    CASE(5, "session index 2 after index 2: indices rise", "%s\n%s\n%s\n%s\n%s\n", line[0], line[1],
         line[2], line[3], line[3]);
    CASE(5, "warm-up session 0 after a measured session", "%s\n%s\n%s\n%s\n%s\n", line[0], line[1],
         line[2], line[3], line[1]);
    snprintf(edit, sizeof edit, "%s", line[4]);
    replace(edit, "\"index\":3", "\"index\":0");
    CASE(5, "session index 0 after index 2", "%s\n%s\n%s\n%s\n%s\n", line[0], line[1], line[2],
         line[3], edit);
    CASE(4, "session index 1 after index 1", "%s\n%s\n%s\n%s\n", line[0], line[1], line[2],
         line[2]); /* a warm-up may begin again at 0 only */
    snprintf(edit, sizeof edit, "%s", line[4]);
    replace(edit, "\"je_allocated\":", "\"je_allocated\":1");
    CASE(5, "session 3's je_allocated delta", "%s\n%s\n%s\n%s\n%s\n", line[0], line[1], line[2],
         line[3], edit);
    cr_assert_leq(nc, 20);
    const char *path = lg_test_tmpfile("bad.jsonl");
    for (int k = 0; k < nc; k++) {
        lg_spit(path, cases[k].body, strlen(cases[k].body));
        struct rpt_results *r = (struct rpt_results *)cases; /* must be reset to NULL */
        lg_clear_error();
        int rc = rpt_results_load(&r, path);
        char where[600];
        snprintf(where, sizeof where, "%s:%d: ", path, cases[k].line);
        cr_assert_eq(rc, LG_EFORMAT, "case %d loaded (%s)", k, cases[k].what);
        cr_assert_null(r);
        cr_assert(strstr(lg_errmsg(), where), "case %d: \"%s\" lacks \"%s\"", k, lg_errmsg(),
                  where);
        cr_assert(strstr(lg_errmsg(), cases[k].what), "case %d: \"%s\" lacks \"%s\"", k,
                  lg_errmsg(), cases[k].what);
        free(cases[k].body);
    }
    /* a string too long for its field */
    char *leak = lg_slurp(fixture("leaking.jsonl"), NULL);
    char *l2 = strchr(leak, '\n') + 1;
    *strchr(l2, '\n') = '\0';
    char *first_line_end = strchr(leak, '\n');
    *first_line_end = '\0';
    char *buf = malloc(strlen(leak) + strlen(l2) + 600);
    char *edited = malloc(strlen(l2) + 600);
    strcpy(edited, l2);
    replace(edited, "\"tag\":\"varmap/input_embed.cont.weight\"", too_long);
    sprintf(buf, "%s\n%s\n", leak, edited);
    lg_spit(path, buf, strlen(buf));
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), ":2: session.leaks[0].tag: string longer than 95 bytes"), "%s",
              lg_errmsg());
    free(buf);
    free(edited);
    free(leak);
    /* an empty file, a missing file */
    lg_spit(path, "", 0);
    cr_assert_eq(rpt_results_load(&r, path), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "the file is empty"), "%s", lg_errmsg());
    cr_assert_eq(rpt_results_load(&r, lg_test_tmpfile("missing.jsonl")), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "missing.jsonl"), "%s", lg_errmsg());
    free(text);
}

/* A session of a planned file: its index, whether it is a warm-up, the baseline its deltas
 * are against. */
struct planned {
    int index;
    bool warmup;
    int64_t base;
};

/* Writes a run line (command, preset, shard, warm-up) and the planned sessions, and loads the
 * file: the loader's status. */
static int load_planned(const char *command, const char *preset, const char *shard, int warmup,
                        const struct planned *p, int n)
{
    struct rpt_run run;
    fill_run(&run);
    strcpy(run.command, command);
    strcpy(run.preset, preset);
    strcpy(run.shard, shard);
    run.warmup = warmup;
    const char *path = lg_test_tmpfile("planned.jsonl");
    struct rpt_writer *w = NULL;
    cr_assert_eq(rpt_writer_open(&w, path, &run), LG_OK, "%s", lg_errmsg());
    for (int i = 0; i < n; i++) {
        struct rpt_session s;
        memset(&s, 0, sizeof s);
        s.index = p[i].index;
        strcpy(s.mode, i % 2 ? "int8" : "fp32");
        s.warmup = p[i].warmup;
        s.train_loss = s.val_loss = s.quant_val_loss = NAN;
        for (int c = 0; c < RPT_NCHANNELS; c++) {
            s.absolute[c] = c == RPT_CH_DEV_PROCESS ? RPT_NONE : p[i].base + 4096 * i + c;
            s.delta[c] =
                s.warmup || s.absolute[c] == RPT_NONE ? RPT_NONE : s.absolute[c] - p[i].base;
        }
        s.peak_tagged_host = s.peak_tagged_device = RPT_NONE;
        cr_assert_eq(rpt_writer_session(w, &s), LG_OK, "%s", lg_errmsg());
    }
    rpt_writer_close(w);
    struct rpt_results *r = NULL;
    lg_clear_error();
    int rc = rpt_results_load(&r, path);
    rpt_results_free(r);
    return rc;
}

Test(results_io, session_indices_and_baselines_as_leakgate_writes_them)
{
    const int64_t B = 1 << 20, C = 3 << 20; /* two processes' baselines */
    /* a run of two modes: indices up by one, one baseline */
    const struct planned run[] = {
        {0, true, B}, {1, true, B}, {2, false, B}, {3, false, B}, {4, false, B}};
    cr_assert_eq(load_planned("run", "tiny", "", 1, run, 5), LG_OK, "%s", lg_errmsg());
    /* a soak shard: measured indices skip by the shard count */
    const struct planned shard[] = {{0, true, B},  {1, true, B},  {2, false, B},
                                    {5, false, B}, {8, false, B}, {11, false, B}};
    cr_assert_eq(load_planned("soak", "tiny", "2/3", 1, shard, 6), LG_OK, "%s", lg_errmsg());
    /* merged shards: warm-ups first, each shard's from 0; measured ones each its shard's
     * baseline */
    const struct planned merged[] = {{0, true, B},  {1, true, B},  {0, true, C},  {1, true, C},
                                     {2, false, B}, {3, false, C}, {4, false, B}, {5, false, C}};
    cr_assert_eq(load_planned("soak", "tiny", "", 1, merged, 8), LG_OK, "%s", lg_errmsg());
    /* merged shards with no warm-up, and a soak of two presets (a baseline per preset) */
    cr_assert_eq(load_planned("soak", "tiny", "", 0, merged + 4, 4), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(load_planned("soak", "tiny,small", "0/1", 1, merged + 2, 6), LG_OK, "%s",
                 lg_errmsg());
    /* the same sessions from one process, one preset: two baselines contradict each other */
    cr_assert_eq(load_planned("soak", "tiny", "0/1", 1, merged + 2, 6), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "planned.jsonl:5: session 3's tagged_host delta"), "%s",
              lg_errmsg());
    cr_assert_eq(load_planned("run", "tiny", "", 0, merged + 4, 4), LG_EFORMAT);
    /* a measured session restarting at 0, a warm-up after a measured one */
    const struct planned restart[] = {{0, true, B}, {1, false, B}, {0, false, B}};
    cr_assert_eq(load_planned("run", "tiny", "", 1, restart, 3), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "planned.jsonl:4: session index 0 after index 1"), "%s",
              lg_errmsg());
    const struct planned late[] = {{0, true, B}, {1, false, B}, {0, true, B}};
    cr_assert_eq(load_planned("soak", "tiny", "", 1, late, 3), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "planned.jsonl:4: warm-up session 0 after a measured"), "%s",
              lg_errmsg());
}

Test(results_io, name_tables_round_trip)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        cr_assert_eq(rpt_channel_from_name(rpt_channel_name(c)), c);
        cr_assert_gt(strlen(rpt_channel_label(c)), 3);
    }
    for (int s = RPT_PASS; s <= RPT_ERROR; s++)
        cr_assert_eq(rpt_status_from_name(rpt_status_name(s)), s);
    cr_assert_eq(rpt_channel_from_name("rsss"), -1);
    cr_assert_eq(rpt_status_from_name("PASS"), -1);
    cr_assert_str_eq(rpt_channel_name(RPT_CH_JE_RESIDENT), "je_resident");
    cr_assert_str_eq(rpt_status_name(RPT_INCONCLUSIVE), "inconclusive");
    cr_assert(rpt_channel_exact(RPT_CH_TAGGED_HOST) && rpt_channel_exact(RPT_CH_REFS));
    cr_assert_not(rpt_channel_exact(RPT_CH_RSS));
}

Test(results_io, every_line_validates_against_the_json_schema, .timeout = 120)
{
    struct rpt_run run;
    struct rpt_session s[3];
    struct rpt_verdict v;
    const char *path = lg_test_tmpfile("schema.jsonl");
    write_sample(path, &run, s, &v);
    for (int i = 0; i < 3; i++) rpt_session_fini(&s[i]);
    cr_assert_eq(lg_shell("%s -c 'import jsonschema' 2>/dev/null", lg_python3()), 0,
                 "python3-jsonschema is needed: apt-get install python3-jsonschema");
    char files[1024];
    snprintf(files, sizeof files, "%s %s/results/*.jsonl", path, lg_test_data_dir());
    lg_expect_jsonl("results.schema.json", files, 0, "every line matches docs/results.schema.json");
    /* and the check can fail: a byte count as a float, an unknown channel */
    char *text = lg_slurp(path, NULL);
    char *p = strstr(text, "\"bytes\":262144,");
    memcpy(p, "\"bytes\":2621.4,", 15);
    const char *bad = lg_test_tmpfile("schema-bad.jsonl");
    lg_spit(bad, text, strlen(text));
    free(text);
    lg_expect_jsonl("results.schema.json", bad, 1,
                    "the schema refuses a byte count that is not an integer");
}
