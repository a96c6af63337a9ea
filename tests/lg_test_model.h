/* lg_test_model.h — helpers of the tests that build tensors in the shared fixture's tracker T
 * (lg_test.h): leaves that take part in autograd, filled from a seeded generator.
 *
 *   static struct tn_rng rng;
 *   tn_rng_seed(&rng, 1);
 *   struct tn_tensor *w = lg_leaf("varmap/w", 2, (int64_t[]){4, 3}, &rng, 1.0f);  // N(0, 1)
 *   ...
 *   tn_release(w);
 */
#ifndef LG_TEST_MODEL_H
#define LG_TEST_MODEL_H

#include "lg_test.h"
#include "tensor.h"

/* A tensor of T tagged `name` that requires a gradient, its values drawn from r: normal with
 * mean 0 and standard deviation `std` (lg_leaf), or uniform in [-scale, scale)
 * (lg_leaf_uniform). Asserts it was made; released with tn_release. */
struct tn_tensor *lg_leaf(const char *name, int nd, const int64_t *shape, struct tn_rng *r,
                          float std);
struct tn_tensor *lg_leaf_uniform(const char *name, int nd, const int64_t *shape, struct tn_rng *r,
                                  float scale);

#endif
