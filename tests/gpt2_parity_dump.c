/* Writes what tools/gpt2_parity_check.py compares against PyTorch: the initial
 * weights, the batches, the logits, loss and every gradient of the first batch,
 * then the losses and grad norms of 10 clipped AdamW steps. With a 16-bit
 * PARAM_DTYPE the model gathers and computes from parameters rounded to it.
 * Usage: gpt2_parity_dump OUT.bin [fp32|bf16|fp16] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/comm.h"
#include "fsdp/dtype.h"
#include "fsdp/gpt2.h"
#include "fsdp/rng.h"
#include "tensor_file.h"

/* Awkward on purpose: 3 heads of 24, a vocab of 67, nothing a power of two. */
enum { STEPS = 10, B = 3, T = 24 };
static const struct model_config CONFIG = {.n_layer = 2, .n_head = 3, .n_embd = 72, .vocab_size = 67, .max_seq_len = T};
static const struct adamw_config ADAMW = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
static const float GRAD_CLIP = 1.0f;
static const uint64_t SEED = 4321;

static void write_unit(FILE *f, struct fsdp_unit *u, const char *prefix, const float *flat) {
  for (int p = 0; p < u->layout.n_params; p++) {
    const struct flat_param_entry *e = &u->layout.params[p];
    char name[160];
    snprintf(name, sizeof name, "%s%s.%s", prefix, u->name, e->name);
    int dims[PARAM_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) dims[d] = (int)e->shape[d];
    tensor_file_write(f, name, flat + e->offset, e->ndim, dims);
  }
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  int dtype = argc == 3 ? dtype_parse(argv[2]) : DTYPE_F32;
  if (argc < 2 || argc > 3 || dtype < 0) {
    fprintf(stderr, "usage: gpt2_parity_dump OUT.bin [fp32|bf16|fp16]\n");
    return 2;
  }
  FILE *out = tensor_file_create(argv[1]);
  struct fsdp_model m;
  struct gpt2 g;
  struct fsdp_mixed_precision mp = {.param_dtype = (enum dtype)dtype, .reduce_dtype = DTYPE_F32};
  fsdp_model_init(&m, device_cpu(), comm_self(), SHARD_FULL, NULL, &mp);
  gpt2_create(&g, &CONFIG, &m, B, T, 0);
  g.keep_logits = 1;
  fsdp_model_init_params(&m, SEED);

  float config[] = {CONFIG.n_layer, CONFIG.n_head, CONFIG.n_embd, CONFIG.vocab_size, CONFIG.max_seq_len,
                    ADAMW.lr, ADAMW.beta1, ADAMW.beta2, ADAMW.eps, ADAMW.weight_decay, GRAD_CLIP,
                    (float)dtype};
  tensor_file_write(out, "config", config, 1, (int[]){sizeof config / sizeof config[0]});
  for (int i = 0; i < m.n_units; i++) {
    float *flat = malloc(m.units[i]->layout.numel * sizeof(float));
    fsdp_unit_gather_params(m.units[i], flat);
    write_unit(out, m.units[i], "", flat);
    free(flat);
  }

  int *inputs = malloc(STEPS * B * T * sizeof(int)), *targets = malloc(STEPS * B * T * sizeof(int));
  for (int i = 0; i < STEPS * B * T; i++) {
    inputs[i] = (int)rng_below(SEED, 1, (uint64_t)i, (uint64_t)CONFIG.vocab_size);
    targets[i] = (int)rng_below(SEED, 2, (uint64_t)i, (uint64_t)CONFIG.vocab_size);
  }
  tensor_file_write_ints(out, "inputs", inputs, 3, (int[]){STEPS, B, T});
  tensor_file_write_ints(out, "targets", targets, 3, (int[]){STEPS, B, T});

  float losses[STEPS], grad_norms[STEPS];
  for (int step = 0; step < STEPS; step++) {
    gpt2_forward(&g, inputs + step * B * T, targets + step * B * T);
    if (step == 0) tensor_file_write(out, "logits", g.logits, 3, (int[]){B, T, CONFIG.vocab_size});
    gpt2_backward(&g, 1.0f);
    losses[step] = g.mean_loss;
    grad_norms[step] = (float)fsdp_model_grad_norm(&m);
    if (step == 0) {
      /* One rank: each unit's gradient shard is its whole flat gradient. */
      for (int i = 0; i < m.n_units; i++) write_unit(out, m.units[i], "grad.", m.units[i]->grad_shard);
    }
    fsdp_model_clip_grads(&m, grad_norms[step], GRAD_CLIP);
    fsdp_model_adamw_step(&m, &ADAMW, step + 1);
  }
  tensor_file_write(out, "losses", losses, 1, (int[]){STEPS});
  tensor_file_write(out, "grad_norms", grad_norms, 1, (int[]){STEPS});
  tensor_file_close(out);
  free(inputs);
  free(targets);
  gpt2_free(&g);
  fsdp_model_free(&m);
  comm_finalize();
  return 0;
}
