/* Writes what the PyTorch parity checks (tools/parity.py, through gpt2_parity_check.py
 * and llama_parity_check.py) compare: the model's config, the initial weights, the
 * batches, the logits, loss and every gradient of the first batch, then the losses and
 * grad norms of 10 clipped AdamW steps. With a 16-bit PARAM_DTYPE the model gathers its
 * parameters rounded to it and computes in it (nn_compute_dtype), fp32 master weights;
 * then it also writes every step's gradients ("step<s>.grad.<name>" from step 1 on) and
 * the master weights after the last step ("final.<name>"), so that the check can follow
 * each step from fsdp.c's own gradients (tools/parity.py says why). MODEL is one of tests/test_models.h's.
 *
 * With `train` and the flags of `fsdp train` instead, it writes what a PyTorch run of
 * that training needs to start where `fsdp train` starts (tools/llama_train_torch.py):
 * the config, the optimizer and schedule settings, the initial weights, and every step's
 * global batch. It builds them with the code `fsdp train` uses (the option parser, the
 * model's init from --seed, the token loader and sampler), so they are fsdp train's own,
 * not a copy of its rules. One rank suffices: neither depends on the world size.
 * Usage: parity_dump OUT.bin MODEL [fp32|bf16|fp16]
 *        parity_dump OUT.bin train FLAGS... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/rng.h"
#include "tensor_file.h"
#include "test_models.h"

enum { STEPS = 10, B = 3, T = TEST_MODEL_SEQ };
/* Tokens per chunk of the loss: its 72 tokens in 8 chunks, the last of 2 (decoder_loss.c). */
enum { LOSS_CHUNK = 10 };
static const struct adamw_config ADAMW = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
static const float GRAD_CLIP = 1.0f;
static const uint64_t SEED = 4321;

static void write_unit(FILE *f, struct fsdp_unit *u, const char *prefix, const float *flat) {
  for (int p = 0; p < u->layout.n_params; p++) {
    const struct flat_param_entry *e = &u->layout.params[p];
    char name[160];
    snprintf(name, sizeof name, "%s%s", prefix, e->name);
    int dims[PARAM_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) dims[d] = (int)e->shape[d];
    tensor_file_write(f, name, flat + e->offset, e->ndim, dims);
  }
}

/* Every field of the config, in model_config's order, and the training's settings. */
static void write_config(FILE *f, const struct model_config *c, const struct adamw_config *adamw, float grad_clip,
                         int dtype) {
  float config[] = {c->n_layer,      c->n_head,     c->n_kv_head,           c->n_embd,
                    c->vocab_size,   c->max_seq_len, c->ffn_hidden,         c->norm_eps,
                    c->rope_theta,   c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor,
                    c->rope_original_max_seq_len, c->tied};
  float train[] = {adamw->lr, adamw->beta1, adamw->beta2, adamw->eps, adamw->weight_decay, grad_clip, (float)dtype};
  tensor_file_write(f, "config", config, 1, (int[]){sizeof config / sizeof config[0]});
  tensor_file_write(f, "train", train, 1, (int[]){sizeof train / sizeof train[0]});
}

/* The fp32 master weights, each name after prefix. */
static void write_weights(FILE *f, struct fsdp_model *m, const char *prefix) {
  for (int i = 0; i < m->n_units; i++) {
    float *flat = malloc(m->units[i]->layout.numel * sizeof(float));
    fsdp_unit_gather_params(m->units[i], flat);
    write_unit(f, m->units[i], prefix, flat);
    free(flat);
  }
}

/* One rank: each unit's gradient shard is its whole flat gradient. */
static void write_grads(FILE *f, struct fsdp_model *m, const char *prefix) {
  for (int i = 0; i < m->n_units; i++) write_unit(f, m->units[i], prefix, m->units[i]->grad_shard);
}

/* The first batch's logits, which the model keeps in its compute dtype, in rows of the
 * padded vocabulary (fsdp/decoder.h): the vocabulary's columns, widened to fp32 (exactly)
 * for the file. */
static void write_logits(FILE *f, const struct decoder *d, int V) {
  size_t n = (size_t)B * T * (size_t)V, Vp = (size_t)d->vocab_padded;
  float *logits = malloc(n * sizeof(float));
  for (size_t row = 0; row < (size_t)B * T; row++) {
    const void *src = (const char *)d->logits + row * Vp * dtype_size(d->dtype);
    if (d->dtype == DTYPE_F32)
      memcpy(logits + row * V, src, (size_t)V * sizeof(float));
    else
      dtype_unpack(d->dtype, src, logits + row * V, (size_t)V);
  }
  tensor_file_write(f, "logits", logits, 3, (int[]){B, T, V});
  free(logits);
}

/* argv: "train" and fsdp train's flags. */
static void dump_training(const char *path, int argc, char **argv) {
  struct command_options options;
  if (command_options_parse(COMMAND_TRAIN, &options, argc, argv)) return;
  const struct train_config o = options.run;
  const struct model_spec *spec = &o.model;
  if (o.mp.param_dtype != DTYPE_F32)
    fsdp_fatal("parity_dump train: --param-dtype %s: the PyTorch reference trains in fp32 only",
               dtype_name(o.mp.param_dtype));
  /* Step s reads rows [0, G) of global batch s: rank r, micro-batch k of K its rows from (r K + k) B. */
  int G = train_config_batch_per_rank(&o, 1) * o.grad_accum, T = o.seq_len;
  struct fsdp_model m;
  fsdp_model_init(&m, device_cpu(), comm_self(), SHARD_FULL, NULL, &o.mp);
  void *model = spec->family->create(&spec->config, &m, 1, T, 0); /* no step runs: one row of activations */
  fsdp_model_wrap(&m, &o.wrap);
  fsdp_model_init_params(&m, o.seed);

  FILE *out = tensor_file_create(path);
  struct adamw_config adamw = {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
  write_config(out, &spec->config, &adamw, o.grad_clip, o.mp.param_dtype);
  float schedule[] = {o.min_lr, (float)o.warmup, (float)o.steps};
  tensor_file_write(out, "schedule", schedule, 1, (int[]){3});
  write_weights(out, &m, "");

  struct data_loader data;
  data_loader_open(&data, &o.data, spec->config.vocab_size, o.seed, T, G);
  size_t per_step = (size_t)G * (size_t)T;
  int *inputs = malloc(o.steps * per_step * sizeof(int)), *targets = malloc(o.steps * per_step * sizeof(int));
  for (int s = 0; s < o.steps; s++)
    data_loader_train_batch(&data, (uint64_t)s, 0, G, inputs + s * per_step, targets + s * per_step);
  tensor_file_write_ints(out, "inputs", inputs, 3, (int[]){o.steps, G, T});
  tensor_file_write_ints(out, "targets", targets, 3, (int[]){o.steps, G, T});
  tensor_file_close(out);
  free(inputs);
  free(targets);
  data_loader_free(&data);
  spec->family->free(model);
  fsdp_model_free(&m);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  if (argc >= 3 && strcmp(argv[2], "train") == 0) {
    dump_training(argv[1], argc - 2, argv + 2);
    comm_finalize();
    return 0;
  }
  const struct test_model *tm = argc >= 3 ? test_model_find(argv[2]) : NULL;
  int dtype = argc == 4 ? dtype_parse(argv[3]) : DTYPE_F32;
  if (argc < 3 || argc > 4 || !tm || dtype < 0) {
    fprintf(stderr, "usage: parity_dump OUT.bin MODEL [fp32|bf16|fp16]\n       parity_dump OUT.bin train FLAGS...\n");
    return 2;
  }
  const struct model_config *config = &tm->config;
  FILE *out = tensor_file_create(argv[1]);
  struct fsdp_model m;
  struct fsdp_mixed_precision mp = {.param_dtype = (enum dtype)dtype, .reduce_dtype = DTYPE_F32};
  fsdp_model_init(&m, device_cpu(), comm_self(), SHARD_FULL, NULL, &mp);
  void *model = tm->family->create(config, &m, B, T, 0);
  fsdp_model_wrap(&m, &FSDP_WRAP_DEFAULT);
  struct decoder *d = model; /* every family's struct starts with its decoder */
  d->keep_logits = 1;
  d->loss_chunk = LOSS_CHUNK;
  fsdp_model_init_params(&m, SEED);

  write_config(out, config, &ADAMW, GRAD_CLIP, dtype);
  write_weights(out, &m, "");

  int *inputs = malloc(STEPS * B * T * sizeof(int)), *targets = malloc(STEPS * B * T * sizeof(int));
  for (int i = 0; i < STEPS * B * T; i++) {
    inputs[i] = (int)rng_below(SEED, 1, (uint64_t)i, (uint64_t)config->vocab_size);
    targets[i] = (int)rng_below(SEED, 2, (uint64_t)i, (uint64_t)config->vocab_size);
  }
  tensor_file_write_ints(out, "inputs", inputs, 3, (int[]){STEPS, B, T});
  tensor_file_write_ints(out, "targets", targets, 3, (int[]){STEPS, B, T});

  float losses[STEPS], grad_norms[STEPS];
  for (int step = 0; step < STEPS; step++) {
    tm->family->forward(model, inputs + step * B * T, targets + step * B * T);
    losses[step] = (float)tm->family->take_loss(model);
    if (step == 0) write_logits(out, d, config->vocab_size);
    tm->family->backward(model, 1.0f);
    grad_norms[step] = (float)fsdp_model_grad_norm(&m);
    if (step == 0) {
      write_grads(out, &m, "grad.");
    } else if (dtype != DTYPE_F32) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "step%d.grad.", step);
      write_grads(out, &m, prefix);
    }
    fsdp_model_clip_grad_norm(&m, GRAD_CLIP, 1.0f);
    fsdp_model_adamw_step(&m, &ADAMW, step + 1);
  }
  if (dtype != DTYPE_F32) write_weights(out, &m, "final.");
  tensor_file_write(out, "losses", losses, 1, (int[]){STEPS});
  tensor_file_write(out, "grad_norms", grad_norms, 1, (int[]){STEPS});
  tensor_file_close(out);
  free(inputs);
  free(targets);
  tm->family->free(model);
  fsdp_model_free(&m);
  comm_finalize();
  return 0;
}
