#include "fsdp/gpt2.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"

struct gpt2_preset {
  const char *name;
  struct gpt2_config config;
};

/* The last four are the GPT-2 124M/350M/774M/1.5B shapes; the first two read bytes as tokens. */
static const struct gpt2_preset presets[] = {
    {"gpt2-tiny", {2, 4, 128, 256, 256}},
    {"shakespeare-char", {6, 6, 384, 256, 256}},
    {"gpt2", {12, 12, 768, 50257, 1024}},
    {"gpt2-medium", {24, 16, 1024, 50257, 1024}},
    {"gpt2-large", {36, 20, 1280, 50257, 1024}},
    {"gpt2-xl", {48, 25, 1600, 50257, 1024}},
};
enum { NUM_PRESETS = sizeof presets / sizeof presets[0] };

int gpt2_config_preset(const char *name, struct gpt2_config *out) {
  for (int i = 0; i < NUM_PRESETS; i++)
    if (strcmp(presets[i].name, name) == 0) {
      *out = presets[i].config;
      return 1;
    }
  return 0;
}

const char *gpt2_preset_names(void) { return "gpt2-tiny, shakespeare-char, gpt2, gpt2-medium, gpt2-large, gpt2-xl"; }

const char *gpt2_config_problem(const struct gpt2_config *c) {
  static char message[160];
  if (c->n_layer < 1) return "--n-layer must be at least 1";
  if (c->n_head < 1) return "--n-head must be at least 1";
  if (c->n_embd < 1) return "--n-embd must be at least 1";
  if (c->vocab_size < 1) return "--vocab-size must be at least 1";
  if (c->max_seq_len < 1) return "the model's maximum sequence length must be at least 1";
  if (c->n_embd % c->n_head != 0) {
    snprintf(message, sizeof message, "--n-embd %d is not divisible by --n-head %d", c->n_embd, c->n_head);
    return message;
  }
  return NULL;
}

const char *gpt2_batch_problem(const struct gpt2_config *c, int B, int T) {
  static char message[200];
  /* The kernels take element counts such as N * 4C as int. */
  size_t N = (size_t)B * (size_t)T, widest = N * 4 * (size_t)c->n_embd;
  if (widest > INT_MAX) {
    snprintf(message, sizeof message,
             "a batch of %d x %d tokens at --n-embd %d makes activations of %zu elements, more than %d: "
             "lower --batch-size or --seq-len",
             B, T, c->n_embd, widest, INT_MAX);
    return message;
  }
  return NULL;
}

/* nanoGPT's init: weights normal(0, 0.02), the two residual projections scaled by
 * 1/sqrt(2 n_layer), biases zero, LayerNorm weights one; matrices are decayed. */
static struct param_spec matrix(const char *name, size_t rows, size_t cols, float std) {
  return (struct param_spec){name, 2, {rows, cols}, PARAM_INIT_NORMAL, std, 1};
}
static struct param_spec vector(const char *name, size_t n, float value) {
  return (struct param_spec){name, 1, {n}, PARAM_INIT_CONSTANT, value, 0};
}

static void declare_units(struct gpt2 *model) {
  const struct gpt2_config *c = &model->config;
  size_t C = (size_t)c->n_embd;
  float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)c->n_layer);
  struct param_spec root[ROOT_NUM_PARAMS] = {
      [ROOT_WTE] = matrix("wte", (size_t)c->vocab_size, C, std),
      [ROOT_WPE] = matrix("wpe", (size_t)c->max_seq_len, C, std),
      [ROOT_LNF_W] = vector("lnf.weight", C, 1.0f),
      [ROOT_LNF_B] = vector("lnf.bias", C, 0.0f),
  };
  struct param_spec block[BLK_NUM_PARAMS] = {
      [BLK_LN1_W] = vector("ln1.weight", C, 1.0f),
      [BLK_LN1_B] = vector("ln1.bias", C, 0.0f),
      [BLK_QKV_W] = matrix("attn.qkv.weight", 3 * C, C, std),
      [BLK_QKV_B] = vector("attn.qkv.bias", 3 * C, 0.0f),
      [BLK_ATTPROJ_W] = matrix("attn.proj.weight", C, C, proj_std),
      [BLK_ATTPROJ_B] = vector("attn.proj.bias", C, 0.0f),
      [BLK_LN2_W] = vector("ln2.weight", C, 1.0f),
      [BLK_LN2_B] = vector("ln2.bias", C, 0.0f),
      [BLK_FC_W] = matrix("mlp.fc.weight", 4 * C, C, std),
      [BLK_FC_B] = vector("mlp.fc.bias", 4 * C, 0.0f),
      [BLK_FCPROJ_W] = matrix("mlp.proj.weight", C, 4 * C, proj_std),
      [BLK_FCPROJ_B] = vector("mlp.proj.bias", C, 0.0f),
  };
  model->root = fsdp_model_add_unit(model->fsdp, "root", root, ROOT_NUM_PARAMS, 1);
  model->blocks = fsdp_xcalloc((size_t)c->n_layer, sizeof *model->blocks);
  for (int l = 0; l < c->n_layer; l++) {
    char name[32];
    snprintf(name, sizeof name, "block %d", l);
    model->blocks[l] = fsdp_model_add_unit(model->fsdp, name, block, BLK_NUM_PARAMS, 0);
  }
}

static float *activation(size_t elements) { return mem_alloc_for_overwrite(elements * sizeof(float), MEM_ACTIVATIONS); }

static void release(float **buffer) {
  mem_free(*buffer);
  *buffer = NULL;
}

/* The buffers of a block's forward and their sizes in floats, the output last. */
enum { BLOCK_ACT_BUFFERS = 15 };
static void block_act_buffers(const struct gpt2 *model, struct gpt2_block_acts *a, float **buffers[BLOCK_ACT_BUFFERS],
                              size_t elements[BLOCK_ACT_BUFFERS]) {
  const struct gpt2_config *c = &model->config;
  size_t N = (size_t)model->B * model->T, C = (size_t)c->n_embd;
  size_t att = (size_t)model->B * c->n_head * model->T * model->T;
  float **b[BLOCK_ACT_BUFFERS] = {&a->ln1,      &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty,
                                  &a->att,      &a->attproj,  &a->residual2, &a->ln2, &a->ln2_mean,
                                  &a->ln2_rstd, &a->fch,      &a->fch_gelu, &a->fcproj, &a->residual3};
  size_t e[BLOCK_ACT_BUFFERS] = {N * C, N, N, N * 3 * C, N * C, att, N * C, N * C,
                                 N * C, N, N, N * 4 * C, N * 4 * C, N * C, N * C};
  memcpy(buffers, b, sizeof b);
  memcpy(elements, e, sizeof e);
}

/* The output may already be held (a recompute). */
static void block_acts_alloc(struct gpt2 *model, int l) {
  float **buffers[BLOCK_ACT_BUFFERS];
  size_t elements[BLOCK_ACT_BUFFERS];
  block_act_buffers(model, &model->acts[l], buffers, elements);
  for (int i = 0; i < BLOCK_ACT_BUFFERS; i++)
    if (!*buffers[i]) *buffers[i] = activation(elements[i]);
}

/* Everything but the output, which is the next block's input. */
static void block_acts_release_inner(struct gpt2 *model, int l) {
  float **buffers[BLOCK_ACT_BUFFERS];
  size_t elements[BLOCK_ACT_BUFFERS];
  block_act_buffers(model, &model->acts[l], buffers, elements);
  for (int i = 0; i < BLOCK_ACT_BUFFERS - 1; i++) release(buffers[i]);
}

void gpt2_release_activations(struct gpt2 *model) {
  float **outside_blocks[] = {&model->encoded, &model->lnf,   &model->lnf_mean, &model->lnf_rstd,
                              &model->logits,  &model->probs, &model->losses,   &model->d_residual,
                              &model->d_ln,    &model->d_qkv, &model->d_atty,   &model->d_fch,
                              &model->d_fch_gelu, &model->d_logits};
  for (size_t i = 0; i < sizeof outside_blocks / sizeof outside_blocks[0]; i++) release(outside_blocks[i]);
  for (int l = 0; l < model->config.n_layer; l++) {
    block_acts_release_inner(model, l);
    release(&model->acts[l].residual3);
  }
}

int gpt2_is_checkpointed(const struct gpt2 *model, int layer) {
  return model->ac_every > 0 && (layer + 1) % model->ac_every == 0;
}

void gpt2_create(struct gpt2 *model, const struct gpt2_config *config, struct fsdp_model *fsdp, int B, int T,
                 int ac_every) {
  FSDP_CHECK(fsdp->n_units == 0 && gpt2_config_problem(config) == NULL && ac_every >= 0);
  FSDP_CHECK(B >= 1 && T >= 1 && T <= config->max_seq_len && gpt2_batch_problem(config, B, T) == NULL);
  memset(model, 0, sizeof *model);
  model->config = *config;
  model->B = B;
  model->T = T;
  model->ac_every = ac_every;
  model->fsdp = fsdp;
  declare_units(model);
  model->inputs = mem_alloc((size_t)B * T * sizeof(int), MEM_ACTIVATIONS);
  model->targets = mem_alloc((size_t)B * T * sizeof(int), MEM_ACTIVATIONS);
  model->acts = fsdp_xcalloc((size_t)config->n_layer, sizeof *model->acts);
}

void gpt2_free(struct gpt2 *model) {
  gpt2_release_activations(model);
  mem_free(model->inputs);
  mem_free(model->targets);
  free(model->acts);
  free(model->blocks);
  memset(model, 0, sizeof *model);
}

/* x -> x + attn(ln1(x)) -> (that) + mlp(ln2(that)) */
static void block_forward(struct gpt2 *model, int l, const float *input) {
  struct fsdp_unit *u = model->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  int N = model->B * model->T, C = model->config.n_embd;
  layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, input, fsdp_unit_param(u, BLK_LN1_W),
                    fsdp_unit_param(u, BLK_LN1_B), N, C);
  matmul_forward(a->qkv, a->ln1, fsdp_unit_param(u, BLK_QKV_W), fsdp_unit_param(u, BLK_QKV_B), N, C, 3 * C);
  attention_forward(a->atty, a->att, a->qkv, model->B, model->T, C, model->config.n_head);
  matmul_forward(a->attproj, a->atty, fsdp_unit_param(u, BLK_ATTPROJ_W), fsdp_unit_param(u, BLK_ATTPROJ_B), N, C,
                 C);
  residual_forward(a->residual2, input, a->attproj, N * C);
  layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, fsdp_unit_param(u, BLK_LN2_W),
                    fsdp_unit_param(u, BLK_LN2_B), N, C);
  matmul_forward(a->fch, a->ln2, fsdp_unit_param(u, BLK_FC_W), fsdp_unit_param(u, BLK_FC_B), N, C, 4 * C);
  gelu_forward(a->fch_gelu, a->fch, N * 4 * C);
  matmul_forward(a->fcproj, a->fch_gelu, fsdp_unit_param(u, BLK_FCPROJ_W), fsdp_unit_param(u, BLK_FCPROJ_B), N,
                 4 * C, C);
  residual_forward(a->residual3, a->residual2, a->fcproj, N * C);
}

void gpt2_forward(struct gpt2 *model, const int *inputs, const int *targets) {
  const struct gpt2_config *c = &model->config;
  int B = model->B, T = model->T, C = c->n_embd, V = c->vocab_size, N = B * T;
  size_t NC = (size_t)N * C;
  gpt2_release_activations(model); /* of a forward without backward (an evaluation) */
  memcpy(model->inputs, inputs, (size_t)N * sizeof(int));
  memcpy(model->targets, targets, (size_t)N * sizeof(int));

  struct fsdp_unit *root = model->root;
  fsdp_pre_forward(model->fsdp, root);
  model->encoded = activation(NC);
  encoder_forward(model->encoded, inputs, fsdp_unit_param(root, ROOT_WTE), fsdp_unit_param(root, ROOT_WPE), B, T,
                  C);
  const float *residual = model->encoded;
  for (int l = 0; l < c->n_layer; l++) {
    fsdp_pre_forward(model->fsdp, model->blocks[l]);
    block_acts_alloc(model, l);
    block_forward(model, l, residual);
    /* A checkpointed block keeps only its output, the next block's input: its
     * backward recomputes the rest from its own input. */
    if (gpt2_is_checkpointed(model, l)) block_acts_release_inner(model, l);
    fsdp_post_forward(model->fsdp, model->blocks[l]);
    residual = model->acts[l].residual3;
  }
  model->lnf = activation(NC);
  model->lnf_mean = activation((size_t)N);
  model->lnf_rstd = activation((size_t)N);
  layernorm_forward(model->lnf, model->lnf_mean, model->lnf_rstd, residual, fsdp_unit_param(root, ROOT_LNF_W),
                    fsdp_unit_param(root, ROOT_LNF_B), N, C);
  /* The head is tied: logits = lnf @ wte^T. */
  model->logits = activation((size_t)N * V);
  model->probs = activation((size_t)N * V);
  model->losses = activation((size_t)N);
  matmul_forward(model->logits, model->lnf, fsdp_unit_param(root, ROOT_WTE), NULL, N, C, V);
  softmax_crossentropy_forward(model->probs, model->losses, model->logits, targets, N, V);
  if (!model->keep_logits) release(&model->logits); /* the backward needs only probs */
  fsdp_post_forward(model->fsdp, root);

  double sum = 0.0;
  for (int i = 0; i < N; i++) sum += model->losses[i];
  model->mean_loss = (float)(sum / N);
}

static void zero(float *buffer, size_t elements) { memset(buffer, 0, elements * sizeof(float)); }

/* On entry d_residual holds dL/d(block output); on exit dL/d(block input). The
 * residual connections pass d_residual through unchanged, so each branch's
 * LayerNorm backward accumulates into it in place. */
static void block_backward(struct gpt2 *model, int l, const float *input) {
  struct fsdp_unit *u = model->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  int N = model->B * model->T, C = model->config.n_embd;
  size_t NC = (size_t)N * C;

  zero(model->d_fch_gelu, 4 * NC);
  matmul_backward(model->d_fch_gelu, fsdp_unit_grad(u, BLK_FCPROJ_W), fsdp_unit_grad(u, BLK_FCPROJ_B),
                  model->d_residual, a->fch_gelu, fsdp_unit_param(u, BLK_FCPROJ_W), N, 4 * C, C);
  zero(model->d_fch, 4 * NC);
  gelu_backward(model->d_fch, a->fch, model->d_fch_gelu, N * 4 * C);
  zero(model->d_ln, NC);
  matmul_backward(model->d_ln, fsdp_unit_grad(u, BLK_FC_W), fsdp_unit_grad(u, BLK_FC_B), model->d_fch, a->ln2,
                  fsdp_unit_param(u, BLK_FC_W), N, C, 4 * C);
  layernorm_backward(model->d_residual, fsdp_unit_grad(u, BLK_LN2_W), fsdp_unit_grad(u, BLK_LN2_B), model->d_ln,
                     a->residual2, fsdp_unit_param(u, BLK_LN2_W), a->ln2_mean, a->ln2_rstd, N, C);

  zero(model->d_atty, NC);
  matmul_backward(model->d_atty, fsdp_unit_grad(u, BLK_ATTPROJ_W), fsdp_unit_grad(u, BLK_ATTPROJ_B),
                  model->d_residual, a->atty, fsdp_unit_param(u, BLK_ATTPROJ_W), N, C, C);
  zero(model->d_qkv, 3 * NC);
  attention_backward(model->d_qkv, model->d_atty, a->qkv, a->att, model->B, model->T, C, model->config.n_head);
  zero(model->d_ln, NC);
  matmul_backward(model->d_ln, fsdp_unit_grad(u, BLK_QKV_W), fsdp_unit_grad(u, BLK_QKV_B), model->d_qkv, a->ln1,
                  fsdp_unit_param(u, BLK_QKV_W), N, C, 3 * C);
  layernorm_backward(model->d_residual, fsdp_unit_grad(u, BLK_LN1_W), fsdp_unit_grad(u, BLK_LN1_B), model->d_ln,
                     input, fsdp_unit_param(u, BLK_LN1_W), a->ln1_mean, a->ln1_rstd, N, C);
}

void gpt2_backward(struct gpt2 *model, float loss_scale) {
  const struct gpt2_config *c = &model->config;
  int B = model->B, T = model->T, C = c->n_embd, V = c->vocab_size, L = c->n_layer, N = B * T;
  size_t NC = (size_t)N * C;
  struct fsdp_unit *root = model->root;
  FSDP_CHECK(model->probs != NULL);

  fsdp_pre_backward(model->fsdp, root);
  release(&model->logits);
  release(&model->losses);
  /* The loss is loss_scale times the mean over the N tokens of this rank. */
  model->d_logits = activation((size_t)N * V);
  zero(model->d_logits, (size_t)N * V);
  softmax_crossentropy_backward(model->d_logits, model->probs, model->targets, loss_scale / (float)N, N, V);
  release(&model->probs);
  model->d_ln = activation(NC);
  zero(model->d_ln, NC);
  matmul_backward(model->d_ln, fsdp_unit_grad(root, ROOT_WTE), NULL, model->d_logits, model->lnf,
                  fsdp_unit_param(root, ROOT_WTE), N, C, V);
  release(&model->d_logits);
  release(&model->lnf);
  model->d_residual = activation(NC);
  zero(model->d_residual, NC);
  layernorm_backward(model->d_residual, fsdp_unit_grad(root, ROOT_LNF_W), fsdp_unit_grad(root, ROOT_LNF_B),
                     model->d_ln, model->acts[L - 1].residual3, fsdp_unit_param(root, ROOT_LNF_W),
                     model->lnf_mean, model->lnf_rstd, N, C);
  release(&model->lnf_mean);
  release(&model->lnf_rstd);
  model->d_qkv = activation(3 * NC);
  model->d_atty = activation(NC);
  model->d_fch = activation(4 * NC);
  model->d_fch_gelu = activation(4 * NC);
  for (int l = L - 1; l >= 0; l--) {
    const float *input = l == 0 ? model->encoded : model->acts[l - 1].residual3;
    fsdp_pre_backward(model->fsdp, model->blocks[l]);
    if (gpt2_is_checkpointed(model, l)) {
      block_acts_alloc(model, l);
      block_forward(model, l, input);
    }
    block_backward(model, l, input);
    block_acts_release_inner(model, l);
    release(&model->acts[l].residual3);
    fsdp_post_backward(model->fsdp, model->blocks[l]);
  }
  encoder_backward(fsdp_unit_grad(root, ROOT_WTE), fsdp_unit_grad(root, ROOT_WPE), model->d_residual,
                   model->inputs, B, T, C);
  gpt2_release_activations(model);
  fsdp_post_backward(model->fsdp, root);
}

/* ---- the dry run of a step for `fsdp plan`: the same hooks, and the bytes each
 * activation would take when the forward and backward above allocate and free
 * it, in the same order. ---- */

static void count_activation(long long elements) { mem_count_planned(MEM_ACTIVATIONS, elements * (long long)sizeof(float)); }

/* Floats of a block's forward buffers, and of its output alone. */
static void block_act_elements(const struct gpt2 *model, long long *all, long long *output) {
  struct gpt2_block_acts unused;
  float **buffers[BLOCK_ACT_BUFFERS];
  size_t elements[BLOCK_ACT_BUFFERS];
  block_act_buffers(model, &unused, buffers, elements);
  *all = 0;
  for (int i = 0; i < BLOCK_ACT_BUFFERS; i++) *all += (long long)elements[i];
  *output = (long long)elements[BLOCK_ACT_BUFFERS - 1];
}

void gpt2_dry_run_forward(struct gpt2 *model) {
  FSDP_CHECK(model->fsdp->dry_run);
  long long N = (long long)model->B * model->T, NC = N * model->config.n_embd, NV = N * model->config.vocab_size;
  long long block_all, block_output;
  block_act_elements(model, &block_all, &block_output);
  fsdp_pre_forward(model->fsdp, model->root);
  count_activation(NC); /* encoded */
  for (int l = 0; l < model->config.n_layer; l++) {
    fsdp_pre_forward(model->fsdp, model->blocks[l]);
    count_activation(block_all);
    if (gpt2_is_checkpointed(model, l)) count_activation(-(block_all - block_output));
    fsdp_post_forward(model->fsdp, model->blocks[l]);
  }
  count_activation(NC + 2 * N); /* lnf and its statistics */
  count_activation(2 * NV + N); /* logits, probs, losses */
  if (!model->keep_logits) count_activation(-NV);
  fsdp_post_forward(model->fsdp, model->root);
}

void gpt2_dry_run_backward(struct gpt2 *model) {
  FSDP_CHECK(model->fsdp->dry_run);
  long long N = (long long)model->B * model->T, NC = N * model->config.n_embd, NV = N * model->config.vocab_size;
  long long block_all, block_output;
  block_act_elements(model, &block_all, &block_output);
  fsdp_pre_backward(model->fsdp, model->root);
  count_activation(-(N + (model->keep_logits ? NV : 0))); /* losses, logits */
  count_activation(NV);        /* d_logits */
  count_activation(-NV);       /* probs */
  count_activation(NC);        /* d_ln */
  count_activation(-NV - NC);  /* d_logits, lnf */
  count_activation(NC);        /* d_residual */
  count_activation(-2 * N);    /* lnf statistics */
  count_activation(12 * NC);   /* d_qkv, d_atty, d_fch, d_fch_gelu */
  for (int l = model->config.n_layer - 1; l >= 0; l--) {
    fsdp_pre_backward(model->fsdp, model->blocks[l]);
    if (gpt2_is_checkpointed(model, l)) count_activation(block_all - block_output);
    long long scratch = (long long)attention_backward_scratch_bytes(model->T);
    mem_count_planned(MEM_ACTIVATIONS, scratch);
    mem_count_planned(MEM_ACTIVATIONS, -scratch);
    count_activation(-block_all);
    fsdp_post_backward(model->fsdp, model->blocks[l]);
  }
  count_activation(-(NC + 14 * NC)); /* encoded, and every gradient buffer */
  fsdp_post_backward(model->fsdp, model->root);
}
