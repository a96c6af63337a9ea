/* csv.c — the per-session series as CSV (RFC 4180): one row per session, a delta and an
 * absolute column per channel, bytes as integers, empty cells where nothing was measured. */
#include <math.h>

#include "render_impl.h"

static void put_int(FILE *f, int64_t v)
{
    fputc(',', f);
    if (v != RPT_NONE) fprintf(f, "%lld", (long long)v);
}

static void put_num(FILE *f, double v)
{
    fputc(',', f);
    if (isfinite(v)) fprintf(f, "%.9g", v);
}

int rpt_write_csv(const struct rpt_results *r, FILE *f)
{
    fputs("index,mode,warmup,duration_s,steps,train_loss,val_loss,quant_val_loss,peak_tagged_host,"
          "peak_tagged_device,leaked_host_bytes,leaked_device_bytes,leak_groups,unreleased_refs",
          f);
    for (int c = 0; c < RPT_NCHANNELS; c++) fprintf(f, ",%s_delta", rpt_channel_name(c));
    for (int c = 0; c < RPT_NCHANNELS; c++) fprintf(f, ",%s_abs", rpt_channel_name(c));
    fputs(",error\r\n", f);
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        int64_t refs = 0;
        for (int k = 0; k < s->n_refs; k++) refs += s->refs[k].refs;
        fprintf(f, "%d,", s->index);
        rpt_put_csv(f, s->mode);
        fprintf(f, ",%d", s->warmup ? 1 : 0);
        put_num(f, s->duration_s);
        fprintf(f, ",%d", s->steps);
        put_num(f, s->train_loss);
        put_num(f, s->val_loss);
        put_num(f, s->quant_val_loss);
        put_int(f, s->peak_tagged_host);
        put_int(f, s->peak_tagged_device);
        put_int(f, s->leaked_host_bytes);
        put_int(f, s->leaked_device_bytes);
        put_int(f, s->n_groups);
        put_int(f, refs);
        for (int c = 0; c < RPT_NCHANNELS; c++) put_int(f, s->delta[c]);
        for (int c = 0; c < RPT_NCHANNELS; c++) put_int(f, s->absolute[c]);
        fputc(',', f);
        rpt_put_csv(f, s->error);
        fputs("\r\n", f);
    }
    return ferror(f) ? lg_fail(LG_EIO, "writing the CSV failed") : LG_OK;
}
