/* lga_wire.h — the messages between leakgate exec (the parent, harness/exec*.c) and its agent in
 * the program (agent/), over the socket the parent hands the agent (LEAKGATE_AGENT_FD).
 *
 * A message is a header {magic, type, payload length} and a payload of little-endian fields:
 * u32, i64, f64 and strings (u32 length + bytes, no NUL). The agent speaks first and the parent
 * answers every message that waits (HELLO, SESSION), so the program never runs ahead of the
 * parent:
 *
 *   agent                                 parent
 *   HELLO {api, pid, flags, jemalloc} -->
 *                                     <-- CONFIG {flags, marker regex, profile dir}
 *   SESSION {snapshot, leaks, dump,   -->   (judges the sessions so far)
 *            [begin snapshot], notes,
 *            [flags, census]}
 *                                     <-- REPLY {flags: arm heap profiling}
 *   ...
 *   BYE {open session?}               -->   (at exit; EOF follows)
 *
 * Both sides encode and decode with the functions below; a decode reads nothing past the end
 * of a payload (a truncated or hostile message is LG_EFORMAT, never a crash).
 */
#ifndef LGA_WIRE_H
#define LGA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lg_base.h"

#define LGA_MAGIC       0x3141474cu /* "LGA1" */
#define LGA_MAX_PAYLOAD (64u << 20)

enum lga_msg_type {
    LGA_HELLO = 1,
    LGA_CONFIG = 2,
    LGA_SESSION = 3,
    LGA_REPLY = 4,
    LGA_BYE = 5,
};

/* HELLO flags: what the agent found in the process. */
#define LGA_HELLO_PROF       1u /* jemalloc was started with heap profiling (opt.prof) */
#define LGA_HELLO_TCACHE_OFF 2u /* jemalloc's thread caches are off (opt.tcache false) */
/* CONFIG and REPLY flags: what the parent asks. */
#define LGA_CFG_PROF_ARMED 1u /* heap profiling on; dump a profile at every session end */
#define LGA_CFG_STACKS     2u /* capture a stack per tagged allocation and retain */
#define LGA_CFG_BASELINE                                                                           \
    4u /* snapshot the next session's begin too (a run without warm-up:                            \
          its baseline is the process before its first session) */
#define LGA_CFG_PROF_EXACT                                                                         \
    8u /* the census found kept blocks: profile every allocation (prof.reset, lg_sample 0) from    \
          the next session on, so the kept blocks are named by stack however small */
/* SESSION flags: what the program used so far (a channel it never used is unavailable). */
#define LGA_USED_TAGS        1u  /* a tagged host allocation */
#define LGA_USED_REFS        2u  /* the ledger of shared objects */
#define LGA_USED_DEVICE      4u  /* an interposed device allocation */
#define LGA_USED_DEVICE_TAGS 8u  /* a tagged device allocation */
#define LGA_DEVICE_DRIVER    16u /* the driver view (cudaMemGetInfo) was read */
/* SESSION's trailing flags (optional: a message without them has none). */
#define LGA_SESSION_AT_EXIT 1u /* ended by the program's exit: begun, never ended */
/* SESSION's census (optional, after the flags): {state, n, n × {born: the agent's session
 * index, bytes, blocks, big_bytes, big_stack}}, the arenas of the sessions of this image still
 * holding blocks; big_* is the largest block of at least 256 KiB born there and alive, with its
 * raw stack (lga_big.c), or {0, ""}. */
#define LGA_CENSUS_OFF       0u /* no census: thread caches on (--tcache), or no jemalloc stats */
#define LGA_CENSUS_ON        1u
#define LGA_CENSUS_CAPPED    2u /* every arena of the pool holds blocks: later sessions uncounted */
#define LGA_CENSUS_MAX_SLOTS 64 /* the most entries one census has (the agent's pool) */

/* A growing output buffer; the memory is the encoder's, freed with lga_enc_fini. */
struct lga_enc {
    unsigned char *p;
    size_t n, cap;
    bool failed; /* out of memory: the message is not sent */
};
void lga_enc_init(struct lga_enc *e, uint32_t type);
void lga_enc_fini(struct lga_enc *e);
void lga_put_u32(struct lga_enc *e, uint32_t v);
void lga_put_i64(struct lga_enc *e, int64_t v);
void lga_put_f64(struct lga_enc *e, double v);
void lga_put_str(struct lga_enc *e, const char *s); /* NULL is written as "" */
/* Finishes the header; returns the bytes to send (e->p, e->n), or false after a failure. */
bool lga_enc_finish(struct lga_enc *e);

/* A payload being read. */
struct lga_dec {
    const unsigned char *p;
    size_t n, at;
    bool bad; /* read past the end, or a string too long for its buffer */
};
uint32_t lga_get_u32(struct lga_dec *d);
int64_t lga_get_i64(struct lga_dec *d);
double lga_get_f64(struct lga_dec *d);
/* Copies a string into buf (always NUL-terminated); too long sets d->bad. */
void lga_get_str(struct lga_dec *d, char *buf, size_t size);
/* A string as a new heap copy (the caller frees it); NULL and d->bad on failure. */
char *lga_get_strdup(struct lga_dec *d);

/* Whole messages on a stream socket. lga_send writes every byte (EINTR retried); lga_recv reads
 * one message into *payload (a heap buffer the caller frees) and its type. Both return LG_OK,
 * LG_EIO (the peer is gone: EOF or an error, errno kept) or LG_EFORMAT (not a message). On
 * LG_EINTR from recv (a signal arrived before any byte) nothing was consumed. */
int lga_send(int fd, const void *buf, size_t n);
int lga_recv(int fd, uint32_t *type, unsigned char **payload, size_t *n);
/* A request and its reply: finishes and sends e's message (freeing e either way), then reads
 * the reply as lga_recv does, retrying a signal's EINTR, into *reply (its payload is the
 * caller's to free: free((void *)reply->p)). LG_ENOMEM when e had failed; LG_EFORMAT when the
 * reply is not of type `want`. */
int lga_call(int fd, struct lga_enc *e, uint32_t want, struct lga_dec *reply);

#endif
