/* lg_addrmap.c — see lg_addrmap.h. Linear probing; deleted slots are tombstones, dropped when
 * the table is rebuilt (at three quarters full, live and deleted together). */
#include "lg_addrmap.h"

#include <stdlib.h>

static size_t slot_of(uint64_t a, size_t cap)
{
    uint64_t h = a >> 4; /* allocations are aligned: the low bits say little */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return (size_t)(h ^ (h >> 33)) & (cap - 1);
}

/* Room for one more entry: rebuilt twice as large as the live entries need. */
static bool reserve(struct lg_addrmap *m)
{
    if ((m->used + m->dead + 1) * 4 <= m->cap * 3) return true;
    size_t ncap = 256;
    while ((m->used + 1) * 2 > ncap) ncap *= 2;
    struct lg_addr_entry *nv = calloc(ncap, sizeof *nv);
    if (!nv) return false;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->v[i].addr <= 1) continue;
        size_t j = slot_of(m->v[i].addr, ncap);
        while (nv[j].addr) j = (j + 1) & (ncap - 1);
        nv[j] = m->v[i];
    }
    free(m->v);
    m->v = nv;
    m->cap = ncap;
    m->dead = 0;
    return true;
}

bool lg_addrmap_put(struct lg_addrmap *m, uint64_t addr, uint64_t bytes, int32_t aux,
                    struct lg_addr_entry *old)
{
    if (old) *old = (struct lg_addr_entry){0};
    if (addr <= 1 || !reserve(m)) return false;
    size_t i = slot_of(addr, m->cap), first_dead = SIZE_MAX;
    for (; m->v[i].addr && m->v[i].addr != addr; i = (i + 1) & (m->cap - 1))
        if (m->v[i].addr == 1 && first_dead == SIZE_MAX) first_dead = i;
    if (m->v[i].addr == addr) {
        if (old) *old = m->v[i];
    } else {
        if (first_dead != SIZE_MAX) {
            i = first_dead;
            m->dead--;
        }
        m->used++;
    }
    m->v[i] = (struct lg_addr_entry){addr, bytes, aux};
    return true;
}

bool lg_addrmap_del(struct lg_addrmap *m, uint64_t addr, struct lg_addr_entry *out)
{
    if (!m->cap || addr <= 1) return false;
    for (size_t i = slot_of(addr, m->cap); m->v[i].addr; i = (i + 1) & (m->cap - 1)) {
        if (m->v[i].addr != addr) continue;
        if (out) *out = m->v[i];
        m->v[i].addr = 1;
        m->used--;
        m->dead++;
        return true;
    }
    return false;
}

void lg_addrmap_fini(struct lg_addrmap *m)
{
    free(m->v);
    *m = (struct lg_addrmap){0};
}
