/* tft_blocks.h — the TFT's building blocks (private to model/tft*.c): each block is a plain
 * struct of borrowed parameter pointers (owned by the VarMap) with an init that creates its
 * parameters under the spec's names, and a forward made of autograd ops.
 *
 *   struct tft_grn g;
 *   tft_grn_init(&g, vm, "enrich", H, H, H, H);  // enrich.fc1.weight, enrich.ctx.weight, ...
 *   struct tn_tensor *theta = tft_grn_forward(m, ctx, &g, phi, c_e);
 */
#ifndef LG_TFT_BLOCKS_H
#define LG_TFT_BLOCKS_H

#include "tft.h"

#define TFT_PNAME 80 /* parameter-name prefixes */

struct tft_linear {
    char name[TFT_PNAME];    /* "enc_vsn.var_grn.dow.fc1" */
    struct tn_tensor *w, *b; /* w [out, in]; b [out] or NULL */
};

struct tft_layernorm {
    struct tn_tensor *w, *b; /* [d] */
};

struct tft_glu {
    struct tft_linear fc; /* [2·d_out, d_in] */
};

struct tft_gan { /* GateAddNorm */
    struct tft_glu glu;
    struct tft_layernorm norm;
};

struct tft_grn {
    int d_in, d_h, d_out, d_c;
    struct tft_linear fc1, fc2, skip; /* skip.w NULL when d_in == d_out */
    struct tft_linear ctx;            /* no bias; w NULL without a context */
    struct tft_glu glu;
    struct tft_layernorm norm;
};

struct tft_vsn {
    int n;
    int var[TFT_MAX_VARS]; /* indices into cfg->vars, in spec order */
    struct tft_grn var_grn[TFT_MAX_VARS];
    struct tft_grn flat; /* only when n > 1 */
};

struct tft_embedding {
    enum tft_kind kind;
    struct tn_tensor *w, *b; /* cat: w [card, H]; real: w [H, 1], b [H] */
};

struct tft_lstm {
    int layers;
    struct tn_tensor *w_ih[8], *w_hh[8], *b_ih[8], *b_hh[8];
};

struct tft_attn {
    int n_head;
    struct tft_linear q, k, v, out; /* no biases */
};

/* The TemporalFusionTransformer (tft.c) */
struct tft_net {
    struct tft_model base;
    struct trk_tracker *trk;
    struct vm_varmap *vm; /* one reference, held by this model */
    struct tft_embedding emb[TFT_MAX_VARS];
    struct tft_vsn static_vsn, enc_vsn, dec_vsn;
    struct tft_grn static_enc[4]; /* cs, ce, cc, ch */
    struct tft_lstm lstm_enc, lstm_dec;
    struct tft_gan post_lstm;
    struct tft_grn enrich;
    struct tft_attn attn;
    struct tft_gan post_attn;
    struct tft_grn pos_ff;
    struct tft_gan pre_out;
    struct tft_linear out;
    struct tn_tensor *mask_cache; /* causal mask [T_dec, T], made once at build */
};

/* Parameter creation (get-or-init through the VarMap); LG_OK or a status. */
int tft_linear_init(struct tft_linear *l, struct vm_varmap *vm, const char *name, int in, int out,
                    bool bias);
int tft_layernorm_init(struct tft_layernorm *n, struct vm_varmap *vm, const char *prefix, int d);
int tft_gan_init(struct tft_gan *g, struct vm_varmap *vm, const char *prefix, int d);
int tft_grn_init(struct tft_grn *g, struct vm_varmap *vm, const char *prefix, int d_in, int d_h,
                 int d_out, int d_c);
int tft_vsn_init(struct tft_vsn *v, struct vm_varmap *vm, const struct tft_config *cfg,
                 const char *prefix, int n, const int *vars, bool context);

/* Forward pieces. All return context-owned tensors (NULL on error, sticky in ctx). */
struct tn_tensor *tft_apply_linear(struct tft_model *m, struct ag_ctx *ctx,
                                   const struct tft_linear *l, struct tn_tensor *x);
struct tn_tensor *tft_gan_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_gan *g,
                                  struct tn_tensor *x, struct tn_tensor *skip);
/* c: context [B, d_c] broadcast over time when x is [B, T, d_in]; may be NULL. */
struct tn_tensor *tft_grn_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_grn *g,
                                  struct tn_tensor *x, struct tn_tensor *c);
/* A real variable's embedding kept factored: ξ = x·wᵀ + b, x [..., 1] (the scaled input),
 * w [H, 1], b [H]. x is NULL for a categorical input (no factors). */
struct tft_factor {
    struct tn_tensor *x, *w, *b;
};
/* xs[j]: the n embedded inputs, each [..., H]; c: context or NULL; f: their factors or NULL
 * → [..., H]. */
struct tn_tensor *tft_vsn_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_vsn *v,
                                  struct tn_tensor **xs, struct tn_tensor *c,
                                  const struct tft_factor *f);

#endif
