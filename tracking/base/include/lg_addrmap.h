/* lg_addrmap.h — live allocations by address: an open-addressing table from an address (a
 * device pointer, a CUPTI record's) to its size and one small number of the caller's. It serves
 * the agent's table of the program's device allocations and CUPTI's table of every live one.
 * Not thread-safe: each owner holds its own lock around it.
 *
 * Worked example:
 *
 *   struct lg_addrmap m = {0};
 *   struct lg_addr_entry old;
 *   lg_addrmap_put(&m, 0x7f0000001000, 4096, 1, &old);  // old.addr == 0: it is new
 *   lg_addrmap_del(&m, 0x7f0000001000, &old);            // true; old.bytes == 4096
 *   LG_ADDRMAP_FOREACH(&m, e) total += e->bytes;
 *   lg_addrmap_fini(&m);
 */
#ifndef LG_ADDRMAP_H
#define LG_ADDRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_addr_entry {
    uint64_t addr; /* 0: empty; 1: deleted (addresses 0 and 1 cannot be stored) */
    uint64_t bytes;
    int32_t aux; /* the caller's: a flag, an index into its own table */
};

struct lg_addrmap {
    struct lg_addr_entry *v; /* power-of-two capacity; calloc'd */
    size_t cap, used, dead;
};

/* Sets addr's entry, replacing any; *old (if non-NULL) receives the entry replaced (addr 0 when
 * there was none). False when the table could not grow (out of memory): nothing changed. */
bool lg_addrmap_put(struct lg_addrmap *m, uint64_t addr, uint64_t bytes, int32_t aux,
                    struct lg_addr_entry *old);
/* Removes addr's entry into *out (if non-NULL); false when there was none. */
bool lg_addrmap_del(struct lg_addrmap *m, uint64_t addr, struct lg_addr_entry *out);
/* Frees the table; the map is empty and usable again. */
void lg_addrmap_fini(struct lg_addrmap *m);

/* Every live entry e (a const struct lg_addr_entry *). */
#define LG_ADDRMAP_FOREACH(m, e)                                                                   \
    for (const struct lg_addr_entry *e = (m)->v; e && e < (m)->v + (m)->cap; e++)                  \
        if (e->addr > 1)

#endif
