/* debug_state.h — the debug state of spec/TFT.md: one batch of a preset at a seed, written as
 * safetensors — every parameter under its own name, the inputs (input.<var>, input.y), the
 * output (output.yhat, output.loss) and every parameter's gradient (grad.<name>), dropout off.
 * Any implementation of the spec can check itself against this file (tests/tools/
 * compare_debug_state.c compares two of them, CPU against GPU in ci/gpu-check).
 *
 * Worked example (what `leakgate debug-state --preset tiny --seed 1 -o tiny.safetensors` does):
 *
 *   struct trk_tracker *trk;
 *   trk_tracker_new(&trk, NULL);
 *   if (tr_debug_state(trk, "tiny", 1, 0, TN_CPU, "tiny.safetensors") != LG_OK)
 *       fprintf(stderr, "%s\n", lg_errmsg());
 *   trk_tracker_free(trk);                  // everything it allocated is freed: returns 0
 */
#ifndef LG_TR_DEBUG_STATE_H
#define LG_TR_DEBUG_STATE_H

#include "trainer.h"

/* Computes the debug state of `preset` at `seed` (batch 0: the preset's) on device `dev` (the
 * tracker needs its device attached: tn_device_init) and writes it to path. Everything it
 * allocates is freed before it returns, error or not. */
int tr_debug_state(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
                   enum tn_device dev, const char *path);

#endif
