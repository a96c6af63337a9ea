/* results_fields.h — each member of a results line described once (private to reports/): its
 * JSON key, its C member and type, the range a reader accepts, and whether older writers left
 * it out. The encoder (results_encode.c) and the decoder (results_decode.c) walk the same
 * tables (results_fields.c), so a member is added in one place and read back as written.
 *
 * Worked example (a leak group and its array in a session):
 *
 *   static const struct rpt_field group_fields[] = {
 *       RPT_STR(struct lg_leak_group, "tag", tag),
 *       RPT_I64(struct lg_leak_group, "bytes", bytes, 0, INT64_MAX),
 *       RPT_ARRAY("stacks", &stacks_array),
 *   };
 *   static const struct rpt_array groups_array =
 *       RPT_ARRAY_OF(struct rpt_session, groups, n_groups, group_fields);
 *   ...
 *   rpt_fields_put(o, session_fields, base, &bad);           // encode
 *   rc = rpt_fields_get(d, "session", o, session_fields, s);  // decode
 *
 * Members with a shape of their own (the seed, the budgets, the samples' compact rows, the heap
 * profile) are RPT_CUSTOM: the encoder's function and the decoder's, named beside the key.
 */
#ifndef LG_RESULTS_FIELDS_H
#define LG_RESULTS_FIELDS_H

#include <stddef.h>

#include "results_json.h"

enum rpt_field_kind {
    RPT_F_END,      /* ends a table */
    RPT_F_STR,      /* char[N]: a string shorter than N bytes (one of `oneof`, if set) */
    RPT_F_I64,      /* int64_t in [lo, hi]; with RPT_NULLABLE, null is RPT_NONE */
    RPT_F_INT,      /* int in [lo, hi] */
    RPT_F_U32,      /* uint32_t */
    RPT_F_NUM,      /* double; null is NaN (non-finite numbers are written as null) */
    RPT_F_BOOL,     /* bool */
    RPT_F_FRAMES,   /* char *: lines joined by '\n', an array of strings; NULL is null */
    RPT_F_STATUS,   /* enum rpt_status, by name */
    RPT_F_CHANNEL,  /* enum rpt_channel, by name */
    RPT_F_MASK,     /* unsigned: a set of channels, an array of their names */
    RPT_F_CHANNELS, /* int64_t[RPT_NCHANNELS]: an object keyed by channel, null RPT_NONE */
    RPT_F_ARRAY,    /* an array of structs (struct rpt_array) */
    RPT_F_OBJECT,   /* a struct member, an object of its own fields (.sub) */
    RPT_F_ENUM,     /* an int: the name at index (value - lo) of .oneof ("" names none) */
    RPT_F_CUSTOM,   /* enc and dec */
};

#define RPT_NULLABLE   1u /* null is allowed: "not measured" */
#define RPT_OPTIONAL   2u /* older writers left it out: a reader keeps the default when absent */
#define RPT_OMIT_EMPTY 4u /* an array written only when it has elements (read: optional) */
/* RPT_PRESENT: written only when the bool at .present_off is true; a reader sets that bool when
 * the member is there (read: optional). */
#define RPT_PRESENT 8u

struct rpt_field;
/* An array member: base's pointer at ptr_off and int count at count_off, elements of
 * elem_size bytes described by fields. */
struct rpt_array {
    size_t ptr_off, count_off, elem_size;
    const struct rpt_field *fields;
    int capacity; /* 0: ptr_off holds a heap pointer (calloc); else an array of this many */
};

/* A custom member: enc sets o[key] (or leaves it out) and counts a failure in *bad; dec reads
 * o[key] (absent included: it decides) into base. */
typedef void (*rpt_field_enc)(json_t *o, const char *key, const void *base, int *bad);
typedef int (*rpt_field_dec)(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                             void *base);

struct rpt_field {
    const char *key;
    enum rpt_field_kind kind;
    unsigned flags;
    size_t off, size;
    int64_t lo, hi;
    const char *const *oneof;    /* RPT_F_STR: the values allowed, NULL-terminated */
    const struct rpt_array *arr; /* RPT_F_ARRAY */
    const struct rpt_field *sub; /* RPT_F_OBJECT */
    size_t present_off;          /* RPT_PRESENT: base's bool that says the member is there */
    rpt_field_enc enc;           /* RPT_F_CUSTOM */
    rpt_field_dec dec;
};

#define RPT_MEMBER(T, m) .off = offsetof(T, m), .size = sizeof(((T *)0)->m)
#define RPT_FIELD(T, k, m, kd, fl)                                                                 \
    {                                                                                              \
        .key = k, .kind = kd, .flags = fl, RPT_MEMBER(T, m)                                        \
    }
#define RPT_RANGED(T, k, m, kd, l, h, fl)                                                          \
    {                                                                                              \
        .key = k, .kind = kd, .flags = fl, RPT_MEMBER(T, m), .lo = l, .hi = h                      \
    }
#define RPT_STR(T, k, m)         RPT_FIELD(T, k, m, RPT_F_STR, 0)
#define RPT_I64(T, k, m, lo, hi) RPT_RANGED(T, k, m, RPT_F_I64, lo, hi, 0)
#define RPT_INT(T, k, m, lo, hi) RPT_RANGED(T, k, m, RPT_F_INT, lo, hi, 0)
#define RPT_NUM(T, k, m)         RPT_FIELD(T, k, m, RPT_F_NUM, 0)
#define RPT_BOOL(T, k, m)        RPT_FIELD(T, k, m, RPT_F_BOOL, 0)
/* A string that must be one of names (NULL-terminated): a space is one of rpt_spaces. */
#define RPT_STR_ONEOF(T, k, m, names)                                                              \
    {                                                                                              \
        .key = k, .kind = RPT_F_STR, RPT_MEMBER(T, m), .oneof = names                              \
    }
#define RPT_ARRAY(k, a)                                                                            \
    {                                                                                              \
        .key = k, .kind = RPT_F_ARRAY, .arr = a                                                    \
    }
#define RPT_OBJECT(T, k, m, fields, fl)                                                            \
    {                                                                                              \
        .key = k, .kind = RPT_F_OBJECT, .flags = fl, RPT_MEMBER(T, m), .sub = fields               \
    }
/* An object written only when base's bool `has` is true (RPT_PRESENT). */
#define RPT_OBJECT_IF(T, k, m, fields, has)                                                        \
    {                                                                                              \
        .key = k, .kind = RPT_F_OBJECT, .flags = RPT_PRESENT, RPT_MEMBER(T, m), .sub = fields,     \
        .present_off = offsetof(T, has)                                                            \
    }
#define RPT_ENUM(T, k, m, names, first)                                                            \
    {                                                                                              \
        .key = k, .kind = RPT_F_ENUM, RPT_MEMBER(T, m), .oneof = names, .lo = first                \
    }
#define RPT_CUSTOM(k, e, d)                                                                        \
    {                                                                                              \
        .key = k, .kind = RPT_F_CUSTOM, .enc = e, .dec = d                                         \
    }
#define RPT_END                                                                                    \
    {                                                                                              \
        .key = NULL, .kind = RPT_F_END                                                             \
    }
#define RPT_ARRAY_OF(T, ptr, count, f)                                                             \
    {                                                                                              \
        offsetof(T, ptr), offsetof(T, count), sizeof(*((T *)0)->ptr), f, 0                         \
    }
#define RPT_INLINE_ARRAY_OF(T, arr, count, f)                                                      \
    {                                                                                              \
        offsetof(T, arr), offsetof(T, count), sizeof(((T *)0)->arr[0]), f,                         \
            LG_ARRAY_LEN(((T *)0)->arr)                                                            \
    }

/* The spaces memory lives in, "host" and "device" (results_fields.c), for RPT_STR_ONEOF. */
extern const char *const rpt_spaces[];
/* A tag's bytes in a class's peak (results_fields.c; the gate's peak checks use it too). */
extern const struct rpt_field rpt_peak_tag_fields[];
/* The records' tables (results_fields.c), in the order members are written. */
extern const struct rpt_field rpt_run_fields[], rpt_budget_fields[], rpt_session_fields[],
    rpt_verdict_fields[];

/* Writes every member of base into o (results_encode.c); failures are counted in *bad. */
void rpt_fields_put(json_t *o, const struct rpt_field *f, const void *base, int *bad);
/* One array member of base as JSON (results_encode.c), and read back (results_decode.c). */
json_t *rpt_array_to_json(const struct rpt_array *arr, const void *base);
/* Reads every member of o into base (results_decode.c); LG_EFORMAT "path:line: where.key: what"
 * for the first that is missing, of the wrong type or out of range. */
int rpt_fields_get(const struct rpt_dec *d, const char *where, json_t *o, const struct rpt_field *f,
                   void *base);

/* The custom members' halves: the encoder's in results_encode.c, the decoder's in
 * results_decode.c. */
void rpt_enc_schema(json_t *o, const char *key, const void *run, int *bad);
int rpt_dec_schema(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *run);
void rpt_enc_seed(json_t *o, const char *key, const void *run, int *bad);
int rpt_dec_seed(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *run);
void rpt_enc_budgets(json_t *o, const char *key, const void *run, int *bad);
int rpt_dec_budgets(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *run);
void rpt_enc_samples(json_t *o, const char *key, const void *s, int *bad);
int rpt_dec_samples(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *s);
void rpt_enc_heap_profile(json_t *o, const char *key, const void *s, int *bad);
int rpt_dec_heap_profile(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                         void *s);
void rpt_enc_notes(json_t *o, const char *key, const void *s, int *bad);
int rpt_dec_notes(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *s);

#endif
