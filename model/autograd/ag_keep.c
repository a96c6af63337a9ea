/* ag_keep.c — taking a step's tape out of its context: what a trainer that "keeps the last
 * graph for debugging" does (the tape-retained fault), and what a debugger would want. */
#include <string.h>

#include "ag_impl.h"

struct ag_tape {
    struct ag_ctx holder; /* a context that owns only the taken tape and temporaries */
};

struct ag_tape *ag_ctx_take_tape(struct ag_ctx *ctx)
{
    struct ag_tape *t = trk_alloc(ctx->trk, sizeof *t, "meta/ag_tape");
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->holder.trk = ctx->trk;
    t->holder.opt = ctx->opt;
    /* move the arrays: the context starts over with empty ones */
    t->holder.temps = ctx->temps;
    t->holder.ntemps = ctx->ntemps;
    t->holder.temps_cap = ctx->temps_cap;
    t->holder.tape = ctx->tape;
    t->holder.ntape = ctx->ntape;
    t->holder.tape_cap = ctx->tape_cap;
    t->holder.chunks = ctx->chunks; /* the nodes' memory; the structs' pool stays with ctx */
    t->holder.chunk = ctx->chunk;
    ctx->chunks = ctx->chunk = NULL;
    ctx->temps = NULL;
    ctx->ntemps = ctx->temps_cap = 0;
    ctx->tape = NULL;
    ctx->ntape = ctx->tape_cap = 0;
    return t;
}

size_t ag_tape_nodes(const struct ag_tape *t) { return t ? t->holder.ntape : 0; }

void ag_tape_free(struct ag_tape *t)
{
    if (!t) return;
    struct trk_tracker *trk = t->holder.trk;
    /* the holder context's own free releases nodes, temporaries and arrays; its struct is
     * embedded here, so free it by parts */
    ag_ctx_reset(&t->holder);
    trk_free(trk, t->holder.temps);
    trk_free(trk, t->holder.tape);
    ag_chunks_free(trk, t->holder.chunks);
    trk_free(trk, t);
}
