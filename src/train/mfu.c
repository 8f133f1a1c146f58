/* The FLOPs a training step does (mfu.h). */
#include "mfu.h"

double mfu_flops_per_token(const struct model_config *c, int T, size_t parameters) {
  double untied_embedding = c->tied ? 0.0 : (double)c->vocab_size * c->n_embd;
  return 6.0 * ((double)parameters - untied_embedding) + 12.0 * c->n_layer * c->n_embd * (double)T;
}
