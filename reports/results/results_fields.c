/* results_fields.c — the members of the run, session and verdict lines, one row each: what
 * the encoder writes and the decoder accepts (docs/results-schema.md documents the same). */
#include <stdint.h>

#include "results_fields.h"
#include "results_impl.h"

/* ---- the run line ------------------------------------------------------------------------ */

const struct rpt_field rpt_run_fields[] = {
    RPT_CUSTOM("schema", rpt_enc_schema, rpt_dec_schema),
    RPT_STR(struct rpt_run, "version", version),
    RPT_STR(struct rpt_run, "command", command),
    RPT_STR(struct rpt_run, "started", started),
    RPT_STR(struct rpt_run, "hostname", hostname),
    RPT_INT(struct rpt_run, "cpus", cpus, 0, INT32_MAX),
    RPT_RANGED(struct rpt_run, "mem_bytes", mem_bytes, RPT_F_I64, 0, INT64_MAX, RPT_NULLABLE),
    RPT_STR(struct rpt_run, "device", device),
    RPT_FIELD(struct rpt_run, "cmd", cmd, RPT_F_STR, RPT_OPTIONAL), /* since 1.2 */
    RPT_RANGED(struct rpt_run, "prof_sample", prof_sample, RPT_F_I64, 0, INT64_MAX, RPT_OPTIONAL),
    RPT_FIELD(struct rpt_run, "blas", blas, RPT_F_STR, RPT_OPTIONAL),           /* since 1.7 */
    RPT_FIELD(struct rpt_run, "blas_core", blas_core, RPT_F_STR, RPT_OPTIONAL), /* since 1.7 */
    RPT_FIELD(struct rpt_run, "blas_path", blas_path, RPT_F_STR, RPT_OPTIONAL), /* since 1.7 */
    RPT_STR(struct rpt_run, "preset", preset),
    RPT_STR(struct rpt_run, "modes", modes),
    RPT_INT(struct rpt_run, "sessions", sessions, 0, INT32_MAX),
    RPT_INT(struct rpt_run, "warmup", warmup, 0, INT32_MAX),
    RPT_INT(struct rpt_run, "steps", steps, 0, INT32_MAX),
    RPT_CUSTOM("seed", rpt_enc_seed, rpt_dec_seed),
    RPT_BOOL(struct rpt_run, "stacks", stacks),
    RPT_STR(struct rpt_run, "inject", inject),
    RPT_STR(struct rpt_run, "shard", shard),
    RPT_CUSTOM("budgets", rpt_enc_budgets, rpt_dec_budgets),
    RPT_FIELD(struct rpt_run, "required", required, RPT_F_MASK, RPT_OPTIONAL), /* since 1.1 */
    RPT_END,
};

/* One channel's budget; noise and min_sessions (statistical channels only) are the encoder's
 * rpt_enc_budgets' to add. */
const struct rpt_field rpt_budget_fields[] = {
    RPT_NUM(struct rpt_budget, "band", band),
    RPT_NUM(struct rpt_budget, "slope", slope),
    RPT_NUM(struct rpt_budget, "floor", floor),
    RPT_FIELD(struct rpt_budget, "measured", measured, RPT_F_BOOL, RPT_OPTIONAL), /* 1.1 */
    RPT_STR(struct rpt_budget, "source", source),
    RPT_END,
};

/* ---- the session line -------------------------------------------------------------------- */

const char *const rpt_spaces[] = {"host", "device", NULL};

static const struct rpt_field stack_fields[] = {
    RPT_I64(struct lg_stack, "count", count, 0, INT64_MAX),
    RPT_FIELD(struct lg_stack, "frames", frames, RPT_F_FRAMES, 0),
    RPT_END,
};
static const struct rpt_array stacks_array =
    RPT_ARRAY_OF(struct lg_leak_group, stacks, n_stacks, stack_fields);

static const struct rpt_field group_fields[] = {
    RPT_STR(struct lg_leak_group, "tag", tag),
    RPT_STR_ONEOF(struct lg_leak_group, "space", space, rpt_spaces),
    RPT_I64(struct lg_leak_group, "bytes", bytes, 0, INT64_MAX),
    RPT_I64(struct lg_leak_group, "count", count, 0, INT64_MAX),
    RPT_ARRAY("stacks", &stacks_array),
    RPT_END,
};
static const struct rpt_array groups_array =
    RPT_ARRAY_OF(struct rpt_session, groups, n_groups, group_fields);

static const struct rpt_field retain_fields[] = {
    RPT_STR(struct lg_retain, "site", site),
    RPT_RANGED(struct lg_retain, "generation", generation, RPT_F_U32, 0, UINT32_MAX, 0),
    RPT_FIELD(struct lg_retain, "stack", stack, RPT_F_FRAMES, RPT_NULLABLE),
    RPT_END,
};
static const struct rpt_array retains_array =
    RPT_ARRAY_OF(struct lg_ref_leak, retains, n_retains, retain_fields);

static const struct rpt_field ref_fields[] = {
    RPT_STR(struct lg_ref_leak, "kind", kind),
    RPT_STR(struct lg_ref_leak, "name", name),
    RPT_INT(struct lg_ref_leak, "refs", refs, 0, INT32_MAX),
    RPT_ARRAY("retains", &retains_array),
    RPT_END,
};
static const struct rpt_array refs_array =
    RPT_ARRAY_OF(struct rpt_session, refs, n_refs, ref_fields);

static const struct rpt_field class_fields[] = {
    RPT_STR(struct lg_class_bytes, "class", cls),
    RPT_I64(struct lg_class_bytes, "bytes", bytes, 0, INT64_MAX),
    RPT_END,
};
static const struct rpt_array classes_array =
    RPT_ARRAY_OF(struct rpt_session, classes, n_classes, class_fields);

/* the gate's members (results 1.5, gate.h) */
static const char *const spaces_or_none[] = {"host", "device", "", NULL}; /* "": an object */

const struct rpt_field rpt_peak_tag_fields[] = {
    RPT_STR(struct rpt_peak_tag, "tag", tag),
    RPT_I64(struct rpt_peak_tag, "bytes", bytes, 0, INT64_MAX),
    RPT_END,
};
static const struct rpt_array class_tags =
    RPT_INLINE_ARRAY_OF(struct rpt_class_peak, tags, n_tags, rpt_peak_tag_fields);
static const struct rpt_field class_peak_fields[] = {
    RPT_STR(struct rpt_class_peak, "class", cls),
    RPT_STR_ONEOF(struct rpt_class_peak, "space", space, rpt_spaces),
    RPT_I64(struct rpt_class_peak, "bytes", bytes, 0, INT64_MAX),
    RPT_ARRAY("tags", &class_tags),
    RPT_END,
};
static const struct rpt_array peaks_array =
    RPT_ARRAY_OF(struct rpt_session, peaks, n_peaks, class_peak_fields);

static const struct rpt_field suppressed_fields[] = {
    RPT_STR(struct rpt_suppressed, "name", name),
    RPT_STR_ONEOF(struct rpt_suppressed, "space", space, spaces_or_none),
    RPT_BOOL(struct rpt_suppressed, "object", object),
    RPT_I64(struct rpt_suppressed, "bytes", bytes, 0, INT64_MAX),
    RPT_I64(struct rpt_suppressed, "over", over, 0, INT64_MAX),
    RPT_INT(struct rpt_suppressed, "rule", rule, 0, INT32_MAX),
    RPT_BOOL(struct rpt_suppressed, "expired", expired),
    RPT_END,
};
static const struct rpt_array suppressed_array =
    RPT_ARRAY_OF(struct rpt_session, suppressed, n_suppressed, suppressed_fields);

/* the exact census under exec (results 1.6) */
static const struct rpt_field census_fields[] = {
    RPT_INT(struct rpt_census, "born", born, 0, INT32_MAX),
    RPT_I64(struct rpt_census, "bytes", bytes, 0, INT64_MAX),
    RPT_I64(struct rpt_census, "blocks", blocks, 0, INT64_MAX),
    RPT_FIELD(struct rpt_census, "frames", frames, RPT_F_FRAMES, RPT_NULLABLE),
    RPT_END,
};
static const struct rpt_array census_array =
    RPT_ARRAY_OF(struct rpt_session, census, n_census, census_fields);

/* CMD's process tree under exec (results 1.8) */
static const struct rpt_field proc_fields[] = {
    RPT_INT(struct rpt_proc, "pid", pid, 1, INT32_MAX),
    RPT_INT(struct rpt_proc, "ppid", ppid, 0, INT32_MAX),
    RPT_STR(struct rpt_proc, "cmd", cmd),
    RPT_RANGED(struct rpt_proc, "rss", rss, RPT_F_I64, 0, INT64_MAX, RPT_NULLABLE),
    RPT_BOOL(struct rpt_proc, "agent", agent),
    RPT_END,
};
static const struct rpt_array procs_array =
    RPT_ARRAY_OF(struct rpt_session, procs, n_procs, proc_fields);

#define SESSION_BYTES(key, m)                                                                      \
    RPT_RANGED(struct rpt_session, key, m, RPT_F_I64, INT64_MIN, INT64_MAX, RPT_NULLABLE)

const struct rpt_field rpt_session_fields[] = {
    RPT_INT(struct rpt_session, "index", index, 0, INT32_MAX),
    RPT_STR(struct rpt_session, "mode", mode),
    RPT_BOOL(struct rpt_session, "warmup", warmup),
    RPT_NUM(struct rpt_session, "duration_s", duration_s),
    RPT_INT(struct rpt_session, "steps", steps, 0, INT32_MAX),
    RPT_NUM(struct rpt_session, "train_loss", train_loss),
    RPT_NUM(struct rpt_session, "val_loss", val_loss),
    RPT_NUM(struct rpt_session, "quant_val_loss", quant_val_loss),
    RPT_FIELD(struct rpt_session, "absolute", absolute, RPT_F_CHANNELS, 0),
    RPT_FIELD(struct rpt_session, "delta", delta, RPT_F_CHANNELS, 0),
    SESSION_BYTES("peak_tagged_host", peak_tagged_host),
    SESSION_BYTES("peak_tagged_device", peak_tagged_device),
    SESSION_BYTES("leaked_host_bytes", leaked_host_bytes),
    SESSION_BYTES("leaked_device_bytes", leaked_device_bytes),
    RPT_RANGED(struct rpt_session, "invalid_frees", invalid_frees, RPT_F_I64, 0, INT64_MAX,
               RPT_OPTIONAL), /* since 1.4 */
    RPT_ARRAY("leaks", &groups_array),
    RPT_ARRAY("refs", &refs_array),
    RPT_ARRAY("classes", &classes_array),
    RPT_CUSTOM("samples", rpt_enc_samples, rpt_dec_samples),
    RPT_CUSTOM("heap_profile", rpt_enc_heap_profile, rpt_dec_heap_profile), /* since 1.2 */
    RPT_CUSTOM("notes", rpt_enc_notes, rpt_dec_notes),                      /* since 1.3 */
    {.key = "peaks", /* since 1.5: written when the session measured them, none included */
     .kind = RPT_F_ARRAY,
     .flags = RPT_PRESENT,
     .arr = &peaks_array,
     .present_off = offsetof(struct rpt_session, peaks_measured)},
    {.key = "suppressed", .kind = RPT_F_ARRAY, .flags = RPT_OMIT_EMPTY, .arr = &suppressed_array},
    RPT_CUSTOM("suppressed_since", rpt_enc_suppressed_since, rpt_dec_suppressed_since),
    RPT_STR(struct rpt_session, "error", error),
    {.key = "census", /* since 1.6: written when the census counted the session, none included */
     .kind = RPT_F_ARRAY,
     .flags = RPT_PRESENT,
     .arr = &census_array,
     .present_off = offsetof(struct rpt_session, census_counted)},
    {.key = "processes_within", /* since 1.8, with "processes" (which decides procs_walked) */
     .kind = RPT_F_INT,
     .flags = RPT_PRESENT,
     RPT_MEMBER(struct rpt_session, procs_within),
     .lo = 0,
     .hi = INT32_MAX,
     .present_off = offsetof(struct rpt_session, procs_walked)},
    {.key = "processes", /* since 1.8: written when CMD's tree was read, none alive included */
     .kind = RPT_F_ARRAY,
     .flags = RPT_PRESENT,
     .arr = &procs_array,
     .present_off = offsetof(struct rpt_session, procs_walked)},
    RPT_END,
};

/* ---- the verdict line -------------------------------------------------------------------- */

static const struct rpt_field channel_verdict_fields[] = {
    RPT_FIELD(struct rpt_channel_verdict, "channel", channel, RPT_F_CHANNEL, 0),
    RPT_FIELD(struct rpt_channel_verdict, "status", status, RPT_F_STATUS, 0),
    RPT_NUM(struct rpt_channel_verdict, "figure", figure),
    RPT_NUM(struct rpt_channel_verdict, "budget", budget),
    RPT_NUM(struct rpt_channel_verdict, "slope", slope),
    RPT_NUM(struct rpt_channel_verdict, "slope_lo", slope_lo),
    RPT_NUM(struct rpt_channel_verdict, "slope_hi", slope_hi),
    RPT_NUM(struct rpt_channel_verdict, "shift", shift),
    RPT_FIELD(struct rpt_channel_verdict, "required", required, RPT_F_BOOL, RPT_OPTIONAL),
    RPT_STR(struct rpt_channel_verdict, "why", why),
    RPT_END,
};
static const struct rpt_array channel_verdicts_array =
    RPT_INLINE_ARRAY_OF(struct rpt_verdict, channels, n_channels, channel_verdict_fields);

/* the census's judgment (results 1.6; reports/census.c) */
static const struct rpt_field census_verdict_fields[] = {
    RPT_FIELD(struct rpt_census_verdict, "status", status, RPT_F_STATUS, 0),
    RPT_INT(struct rpt_census_verdict, "kept", kept, 0, INT32_MAX),
    RPT_INT(struct rpt_census_verdict, "since", since, 0, INT32_MAX),
    RPT_INT(struct rpt_census_verdict, "first", first, -1, INT32_MAX),
    RPT_INT(struct rpt_census_verdict, "last", last, 0, INT32_MAX),
    RPT_I64(struct rpt_census_verdict, "bytes", bytes, 0, INT64_MAX),
    RPT_I64(struct rpt_census_verdict, "blocks", blocks, 0, INT64_MAX),
    RPT_STR(struct rpt_census_verdict, "why", why),
    RPT_END,
};

/* the process tree's judgment (results 1.8; reports/procs.c) */
static const struct rpt_field procs_verdict_fields[] = {
    RPT_FIELD(struct rpt_procs_verdict, "status", status, RPT_F_STATUS, 0),
    RPT_INT(struct rpt_procs_verdict, "judged", judged, 1, INT32_MAX),
    RPT_INT(struct rpt_procs_verdict, "children", children, 0, INT32_MAX),
    RPT_INT(struct rpt_procs_verdict, "brief", brief, 0, INT32_MAX),
    RPT_INT(struct rpt_procs_verdict, "within", within, 0, INT32_MAX),
    RPT_INT(struct rpt_procs_verdict, "exited", exited, 0, INT32_MAX),
    RPT_INT(struct rpt_procs_verdict, "unseen", unseen, 0, INT32_MAX),
    RPT_STR(struct rpt_procs_verdict, "leaking", leaking),
    RPT_STR(struct rpt_procs_verdict, "why", why),
    RPT_END,
};

const struct rpt_field rpt_verdict_fields[] = {
    RPT_FIELD(struct rpt_verdict, "status", status, RPT_F_STATUS, 0),
    RPT_INT(struct rpt_verdict, "exit_code", exit_code, 0, 255),
    RPT_INT(struct rpt_verdict, "sessions_measured", sessions_measured, 0, INT32_MAX),
    RPT_RANGED(struct rpt_verdict, "sessions_planned", sessions_planned, RPT_F_INT, 0, INT32_MAX,
               RPT_OPTIONAL), /* since 1.1 */
    RPT_BOOL(struct rpt_verdict, "partial", partial),
    RPT_FIELD(struct rpt_verdict, "stopped", stopped, RPT_F_STR, RPT_OPTIONAL),    /* 1.1 */
    RPT_FIELD(struct rpt_verdict, "required", required, RPT_F_MASK, RPT_OPTIONAL), /* 1.1 */
    RPT_STR(struct rpt_verdict, "summary", summary),
    RPT_ARRAY("channels", &channel_verdicts_array),
    RPT_OBJECT_IF(struct rpt_verdict, "census", census, census_verdict_fields, census.counted),
    RPT_OBJECT_IF(struct rpt_verdict, "processes", procs, procs_verdict_fields, procs.counted),
    RPT_END,
};
