/* lga_wire.c — encoding, decoding and moving the messages of lga_wire.h. Used by the agent
 * (inside the program) and by leakgate exec (the parent); allocates only the buffers it says. */
#define _GNU_SOURCE
#include "lga_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct lga_header {
    uint32_t magic, type;
    uint64_t length;
};

static void put(struct lga_enc *e, const void *v, size_t k)
{
    if (e->failed) return;
    if (e->n + k > e->cap) {
        size_t cap = e->cap ? e->cap : 4096;
        while (cap < e->n + k) cap *= 2;
        unsigned char *np = realloc(e->p, cap);
        if (!np) {
            e->failed = true;
            return;
        }
        e->p = np;
        e->cap = cap;
    }
    memcpy(e->p + e->n, v, k);
    e->n += k;
}

void lga_enc_init(struct lga_enc *e, uint32_t type)
{
    memset(e, 0, sizeof *e);
    struct lga_header h = {LGA_MAGIC, type, 0};
    put(e, &h, sizeof h);
}

void lga_enc_fini(struct lga_enc *e)
{
    free(e->p);
    memset(e, 0, sizeof *e);
}

void lga_put_u32(struct lga_enc *e, uint32_t v) { put(e, &v, sizeof v); }
void lga_put_i64(struct lga_enc *e, int64_t v) { put(e, &v, sizeof v); }
void lga_put_f64(struct lga_enc *e, double v) { put(e, &v, sizeof v); }

void lga_put_str(struct lga_enc *e, const char *s)
{
    uint32_t k = s ? (uint32_t)strlen(s) : 0;
    lga_put_u32(e, k);
    if (k) put(e, s, k);
}

bool lga_enc_finish(struct lga_enc *e)
{
    if (e->failed || e->n - sizeof(struct lga_header) > LGA_MAX_PAYLOAD) return false;
    uint64_t len = e->n - sizeof(struct lga_header);
    memcpy(e->p + offsetof(struct lga_header, length), &len, sizeof len);
    return true;
}

static bool get(struct lga_dec *d, void *v, size_t k)
{
    if (d->bad || k > d->n - d->at) {
        d->bad = true;
        memset(v, 0, k);
        return false;
    }
    memcpy(v, d->p + d->at, k);
    d->at += k;
    return true;
}

uint32_t lga_get_u32(struct lga_dec *d)
{
    uint32_t v;
    get(d, &v, sizeof v);
    return v;
}

int64_t lga_get_i64(struct lga_dec *d)
{
    int64_t v;
    get(d, &v, sizeof v);
    return v;
}

double lga_get_f64(struct lga_dec *d)
{
    double v;
    get(d, &v, sizeof v);
    return v;
}

void lga_get_str(struct lga_dec *d, char *buf, size_t size)
{
    uint32_t k = lga_get_u32(d);
    buf[0] = '\0';
    if (d->bad) return;
    if (k >= size || k > d->n - d->at) {
        d->bad = true;
        return;
    }
    memcpy(buf, d->p + d->at, k);
    buf[k] = '\0';
    d->at += k;
}

char *lga_get_strdup(struct lga_dec *d)
{
    uint32_t k = lga_get_u32(d);
    if (d->bad || k > d->n - d->at) {
        d->bad = true;
        return NULL;
    }
    char *s = malloc((size_t)k + 1);
    if (!s) {
        d->bad = true;
        return NULL;
    }
    memcpy(s, d->p + d->at, k);
    s[k] = '\0';
    d->at += k;
    return s;
}

int lga_send(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return LG_EIO;
        p += k;
        n -= (size_t)k;
    }
    return LG_OK;
}

/* Reads exactly n bytes; `first` says whether a signal before any byte may interrupt. */
static int read_full(int fd, void *buf, size_t n, bool first)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, p + got, n - got, 0);
        if (k < 0 && errno == EINTR) {
            if (first && got == 0) return LG_EINTR;
            continue;
        }
        if (k <= 0) return LG_EIO;
        got += (size_t)k;
    }
    return LG_OK;
}

int lga_recv(int fd, uint32_t *type, unsigned char **payload, size_t *n)
{
    struct lga_header h;
    *payload = NULL;
    *n = 0;
    int rc = read_full(fd, &h, sizeof h, true);
    if (rc != LG_OK) return rc;
    if (h.magic != LGA_MAGIC || h.length > LGA_MAX_PAYLOAD) return LG_EFORMAT;
    unsigned char *p = malloc(h.length ? h.length : 1);
    if (!p) return LG_ENOMEM;
    rc = read_full(fd, p, h.length, false);
    if (rc != LG_OK) {
        free(p);
        return rc;
    }
    *type = h.type;
    *payload = p;
    *n = h.length;
    return LG_OK;
}

int lga_call(int fd, struct lga_enc *e, uint32_t want, struct lga_dec *reply)
{
    int rc = lga_enc_finish(e) ? lga_send(fd, e->p, e->n) : LG_ENOMEM;
    lga_enc_fini(e);
    uint32_t type = 0;
    unsigned char *payload = NULL;
    size_t n = 0;
    *reply = (struct lga_dec){0};
    if (rc != LG_OK) return rc;
    do rc = lga_recv(fd, &type, &payload, &n);
    while (rc == LG_EINTR);
    if (rc == LG_OK && type != want) rc = LG_EFORMAT;
    if (rc != LG_OK) {
        free(payload);
        return rc;
    }
    *reply = (struct lga_dec){.p = payload, .n = n};
    return LG_OK;
}
