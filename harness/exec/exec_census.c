/* exec_census.c — the census's names: the stacks its entries carry from the agent (the largest
 * big block born in a session, recorded at birth by agent/lga_big.c) made readable.
 *
 * The agent sends raw return addresses; they are symbolised through CMD's memory map, read
 * while CMD waits for our reply (so it holds still). A block kept for many sessions is sent at
 * every session end, and addr2line on a large library takes long: the text of each raw stack is
 * kept (HX_CENSUS_NAMES of them, the oldest replaced) and reused while the same stack comes.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"

/* The symbolised text of raw (a new string), from the cache or through CMD's map; NULL when it
 * cannot be named (the entry is then named by a heap profile, or not at all). */
static char *name_of(struct hx_census_names *cn, pid_t pid, char **maps_text, const char *raw)
{
    for (int i = 0; i < cn->n; i++)
        if (strcmp(cn->v[i].raw, raw) == 0) return strdup(cn->v[i].text);
    if (!*maps_text && !(*maps_text = hx_read_maps(pid))) return NULL;
    struct hx_maps maps;
    if (hx_maps_parse(&maps, *maps_text) != LG_OK) return NULL;
    char *text = hx_symbolize_text(&maps, raw);
    hx_maps_fini(&maps);
    if (!text) return NULL;
    int k = cn->n < HX_CENSUS_NAMES ? cn->n++ : cn->next++ % HX_CENSUS_NAMES;
    char *r = strdup(raw), *t = strdup(text);
    if (r && t) {
        if (k < cn->n && cn->v[k].raw) {
            free(cn->v[k].raw);
            free(cn->v[k].text);
        }
        cn->v[k].raw = r;
        cn->v[k].text = t;
    } else {
        free(r);
        free(t);
        if (k == cn->n - 1 && !cn->v[k].raw) cn->n--;
    }
    return text;
}

void hx_census_names_apply(struct hx_census_names *cn, pid_t pid, int first_measured,
                           struct rpt_session *s)
{
    char *maps_text = NULL;
    for (int i = 0; i < s->n_census; i++) {
        struct rpt_census *c = &s->census[i];
        if (!c->frames) continue;
        /* a warm-up's blocks are not judged: their names would only cost addr2line's time */
        char *text = c->born >= first_measured ? name_of(cn, pid, &maps_text, c->frames) : NULL;
        free(c->frames);
        c->frames = text;
    }
    free(maps_text);
}

void hx_census_names_fini(struct hx_census_names *cn)
{
    for (int i = 0; i < cn->n; i++) {
        free(cn->v[i].raw);
        free(cn->v[i].text);
    }
    memset(cn, 0, sizeof *cn);
}
