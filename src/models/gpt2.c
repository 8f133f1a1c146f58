#include "fsdp/gpt2.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"

static const char *gpt2_config_problem(const struct model_config *c) {
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

const char *gpt2_batch_problem(const struct model_config *c, int B, int T) {
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
  return (struct param_spec){name, 2, {rows, cols}, PARAM_INIT_NORMAL, std, 1, 0.0f};
}
static struct param_spec vector(const char *name, size_t n, float value) {
  return (struct param_spec){name, 1, {n}, PARAM_INIT_CONSTANT, value, 0, 0.0f};
}

static void declare_units(struct gpt2 *model) {
  const struct model_config *c = &model->config;
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

static struct nn_ctx ctx(const struct gpt2 *model) {
  return (struct nn_ctx){model->fsdp->device, model->fsdp->streams.compute};
}

static size_t dtype_bytes(const struct gpt2 *model) { return dtype_size(model->dtype); }

static void *activation(const struct gpt2 *model, size_t elements) {
  return device_alloc(model->fsdp->device, elements * dtype_bytes(model), MEM_ACTIVATIONS, model->fsdp->streams.compute);
}

static void release(const struct gpt2 *model, void **buffer) {
  device_free(model->fsdp->device, *buffer, model->fsdp->streams.compute);
  *buffer = NULL;
}

/* Activations as the kernels take them: (N, cols) or (N). */
static struct tensor act2(const struct gpt2 *model, void *data, size_t cols) {
  return tensor_2d(data, model->dtype, (size_t)model->B * model->T, cols);
}
static struct tensor act1(const struct gpt2 *model, void *data) {
  return tensor_1d(data, model->dtype, (size_t)model->B * model->T);
}
static struct tensor tokens(const struct gpt2 *model, int *data) {
  return tensor_2d(data, DTYPE_I32, (size_t)model->B, (size_t)model->T);
}

static void zero(const struct gpt2 *model, void *buffer, size_t elements) {
  device_memset(model->fsdp->streams.compute, buffer, 0, elements * dtype_bytes(model));
}

/* The buffers of a block's forward and their sizes in elements, the output last. */
enum { BLOCK_ACT_BUFFERS = 15 };
static void block_act_buffers(const struct gpt2 *model, struct gpt2_block_acts *a, void **buffers[BLOCK_ACT_BUFFERS],
                              size_t elements[BLOCK_ACT_BUFFERS]) {
  const struct model_config *c = &model->config;
  size_t N = (size_t)model->B * model->T, C = (size_t)c->n_embd;
  size_t att = (size_t)model->B * c->n_head * model->T * model->T;
  void **b[BLOCK_ACT_BUFFERS] = {&a->ln1,      &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty,
                                 &a->att,      &a->attproj,  &a->residual2, &a->ln2, &a->ln2_mean,
                                 &a->ln2_rstd, &a->fch,      &a->fch_gelu, &a->fcproj, &a->residual3};
  size_t e[BLOCK_ACT_BUFFERS] = {N * C, N, N, N * 3 * C, N * C, att, N * C, N * C,
                                 N * C, N, N, N * 4 * C, N * 4 * C, N * C, N * C};
  memcpy(buffers, b, sizeof b);
  memcpy(elements, e, sizeof e);
}

/* The output may already be held (a recompute). */
static void block_acts_alloc(struct gpt2 *model, int l) {
  void **buffers[BLOCK_ACT_BUFFERS];
  size_t elements[BLOCK_ACT_BUFFERS];
  block_act_buffers(model, &model->acts[l], buffers, elements);
  for (int i = 0; i < BLOCK_ACT_BUFFERS; i++)
    if (!*buffers[i]) *buffers[i] = activation(model, elements[i]);
}

/* Everything but the output, which is the next block's input. */
static void block_acts_release_inner(struct gpt2 *model, int l) {
  void **buffers[BLOCK_ACT_BUFFERS];
  size_t elements[BLOCK_ACT_BUFFERS];
  block_act_buffers(model, &model->acts[l], buffers, elements);
  for (int i = 0; i < BLOCK_ACT_BUFFERS - 1; i++) release(model, buffers[i]);
}

void gpt2_release_activations(struct gpt2 *model) {
  void **outside_blocks[] = {&model->encoded, &model->lnf,   &model->lnf_mean, &model->lnf_rstd,
                             &model->logits,  &model->probs, &model->losses,   &model->d_residual,
                             &model->d_ln,    &model->d_qkv, &model->d_atty,   &model->d_fch,
                             &model->d_fch_gelu, &model->d_logits};
  for (size_t i = 0; i < sizeof outside_blocks / sizeof outside_blocks[0]; i++) release(model, outside_blocks[i]);
  for (int l = 0; l < model->config.n_layer; l++) {
    block_acts_release_inner(model, l);
    release(model, &model->acts[l].residual3);
  }
}

int gpt2_is_checkpointed(const struct gpt2 *model, int layer) {
  return model->ac_every > 0 && (layer + 1) % model->ac_every == 0;
}

void gpt2_create(struct gpt2 *model, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                 int ac_every) {
  FSDP_CHECK(fsdp->n_units == 0 && gpt2_config_problem(config) == NULL && ac_every >= 0);
  FSDP_CHECK(B >= 1 && T >= 1 && T <= config->max_seq_len && gpt2_batch_problem(config, B, T) == NULL);
  memset(model, 0, sizeof *model);
  model->config = *config;
  model->B = B;
  model->T = T;
  model->ac_every = ac_every;
  model->fsdp = fsdp;
  model->dtype = nn_compute_dtype(fsdp->device, fsdp->mp.param_dtype);
  declare_units(model);
  struct stream *compute = fsdp->streams.compute;
  model->inputs = device_alloc(fsdp->device, (size_t)B * T * sizeof(int), MEM_ACTIVATIONS, compute);
  model->targets = device_alloc(fsdp->device, (size_t)B * T * sizeof(int), MEM_ACTIVATIONS, compute);
  model->loss_sum = device_alloc(fsdp->device, sizeof(double), MEM_ACTIVATIONS, compute);
  model->acts = fsdp_xcalloc((size_t)config->n_layer, sizeof *model->acts);
}

void gpt2_free(struct gpt2 *model) {
  gpt2_release_activations(model);
  struct stream *compute = model->fsdp->streams.compute;
  device_free(model->fsdp->device, model->inputs, compute);
  device_free(model->fsdp->device, model->targets, compute);
  device_free(model->fsdp->device, model->loss_sum, compute);
  free(model->acts);
  free(model->blocks);
  memset(model, 0, sizeof *model);
}

/* x -> x + attn(ln1(x)) -> (that) + mlp(ln2(that)) */
static void block_forward(struct gpt2 *model, int l, void *input) {
  struct fsdp_unit *u = model->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  struct nn_ctx c = ctx(model);
  size_t C = (size_t)model->config.n_embd;
  struct tensor att = tensor_4d(a->att, model->dtype, (size_t)model->B, (size_t)model->config.n_head,
                                (size_t)model->T, (size_t)model->T);
  nn_layernorm_forward(&c, act2(model, a->ln1, C), act1(model, a->ln1_mean), act1(model, a->ln1_rstd),
                       act2(model, input, C), fsdp_unit_param(u, BLK_LN1_W), fsdp_unit_param(u, BLK_LN1_B));
  nn_matmul_forward(&c, act2(model, a->qkv, 3 * C), act2(model, a->ln1, C), fsdp_unit_param(u, BLK_QKV_W),
                    fsdp_unit_param(u, BLK_QKV_B));
  nn_attention_forward(&c, act2(model, a->atty, C), att, act2(model, a->qkv, 3 * C));
  nn_matmul_forward(&c, act2(model, a->attproj, C), act2(model, a->atty, C), fsdp_unit_param(u, BLK_ATTPROJ_W),
                    fsdp_unit_param(u, BLK_ATTPROJ_B));
  nn_residual_forward(&c, act2(model, a->residual2, C), act2(model, input, C), act2(model, a->attproj, C));
  nn_layernorm_forward(&c, act2(model, a->ln2, C), act1(model, a->ln2_mean), act1(model, a->ln2_rstd),
                       act2(model, a->residual2, C), fsdp_unit_param(u, BLK_LN2_W), fsdp_unit_param(u, BLK_LN2_B));
  nn_matmul_forward(&c, act2(model, a->fch, 4 * C), act2(model, a->ln2, C), fsdp_unit_param(u, BLK_FC_W),
                    fsdp_unit_param(u, BLK_FC_B));
  nn_gelu_forward(&c, act2(model, a->fch_gelu, 4 * C), act2(model, a->fch, 4 * C));
  nn_matmul_forward(&c, act2(model, a->fcproj, C), act2(model, a->fch_gelu, 4 * C), fsdp_unit_param(u, BLK_FCPROJ_W),
                    fsdp_unit_param(u, BLK_FCPROJ_B));
  nn_residual_forward(&c, act2(model, a->residual3, C), act2(model, a->residual2, C), act2(model, a->fcproj, C));
}

void gpt2_forward(struct gpt2 *model, const int *inputs, const int *targets) {
  const struct model_config *c = &model->config;
  size_t N = (size_t)model->B * model->T, C = (size_t)c->n_embd, V = (size_t)c->vocab_size;
  struct nn_ctx k = ctx(model);
  gpt2_release_activations(model); /* of a forward without backward (an evaluation) */
  device_copy_to_device(k.stream, model->inputs, inputs, N * sizeof(int));
  device_copy_to_device(k.stream, model->targets, targets, N * sizeof(int));

  struct fsdp_unit *root = model->root;
  fsdp_pre_forward(model->fsdp, root);
  model->encoded = activation(model, N * C);
  nn_encoder_forward(&k, act2(model, model->encoded, C), tokens(model, model->inputs), fsdp_unit_param(root, ROOT_WTE),
                     fsdp_unit_param(root, ROOT_WPE));
  void *residual = model->encoded;
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
  model->lnf = activation(model, N * C);
  model->lnf_mean = activation(model, N);
  model->lnf_rstd = activation(model, N);
  nn_layernorm_forward(&k, act2(model, model->lnf, C), act1(model, model->lnf_mean), act1(model, model->lnf_rstd),
                       act2(model, residual, C), fsdp_unit_param(root, ROOT_LNF_W), fsdp_unit_param(root, ROOT_LNF_B));
  /* The head is tied: logits = lnf @ wte^T. */
  model->logits = activation(model, N * V);
  model->probs = activation(model, N * V);
  model->losses = activation(model, N);
  nn_matmul_forward(&k, act2(model, model->logits, V), act2(model, model->lnf, C), fsdp_unit_param(root, ROOT_WTE),
                    TENSOR_NONE);
  nn_softmax_crossentropy_forward(&k, act2(model, model->probs, V), act1(model, model->losses),
                                  act2(model, model->logits, V), tokens(model, model->targets));
  if (!model->keep_logits) release(model, &model->logits); /* the backward needs only probs */
  fsdp_post_forward(model->fsdp, root);

  double sum = 0.0;
  device_memset(k.stream, model->loss_sum, 0, sizeof(double));
  nn_sum(&k, tensor_1d(model->loss_sum, DTYPE_F64, 1), act1(model, model->losses));
  device_copy_to_host(k.stream, &sum, model->loss_sum, sizeof sum);
  stream_synchronize(k.stream);
  model->mean_loss = (float)(sum / (double)N);
}

/* On entry d_residual holds dL/d(block output); on exit dL/d(block input). The
 * residual connections pass d_residual through unchanged, so each branch's
 * LayerNorm backward accumulates into it in place. */
static void block_backward(struct gpt2 *model, int l, void *input) {
  struct fsdp_unit *u = model->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  struct nn_ctx c = ctx(model);
  size_t N = (size_t)model->B * model->T, C = (size_t)model->config.n_embd;
  struct tensor att = tensor_4d(a->att, model->dtype, (size_t)model->B, (size_t)model->config.n_head,
                                (size_t)model->T, (size_t)model->T);
  struct tensor d_residual = act2(model, model->d_residual, C), d_ln = act2(model, model->d_ln, C);

  zero(model, model->d_fch_gelu, 4 * N * C);
  nn_matmul_backward(&c, act2(model, model->d_fch_gelu, 4 * C), fsdp_unit_grad(u, BLK_FCPROJ_W),
                     fsdp_unit_grad(u, BLK_FCPROJ_B), d_residual, act2(model, a->fch_gelu, 4 * C),
                     fsdp_unit_param(u, BLK_FCPROJ_W));
  zero(model, model->d_fch, 4 * N * C);
  nn_gelu_backward(&c, act2(model, model->d_fch, 4 * C), act2(model, a->fch, 4 * C),
                   act2(model, model->d_fch_gelu, 4 * C));
  zero(model, model->d_ln, N * C);
  nn_matmul_backward(&c, d_ln, fsdp_unit_grad(u, BLK_FC_W), fsdp_unit_grad(u, BLK_FC_B),
                     act2(model, model->d_fch, 4 * C), act2(model, a->ln2, C), fsdp_unit_param(u, BLK_FC_W));
  nn_layernorm_backward(&c, d_residual, fsdp_unit_grad(u, BLK_LN2_W), fsdp_unit_grad(u, BLK_LN2_B), d_ln,
                        act2(model, a->residual2, C), fsdp_unit_param(u, BLK_LN2_W), act1(model, a->ln2_mean),
                        act1(model, a->ln2_rstd));

  zero(model, model->d_atty, N * C);
  nn_matmul_backward(&c, act2(model, model->d_atty, C), fsdp_unit_grad(u, BLK_ATTPROJ_W),
                     fsdp_unit_grad(u, BLK_ATTPROJ_B), d_residual, act2(model, a->atty, C),
                     fsdp_unit_param(u, BLK_ATTPROJ_W));
  zero(model, model->d_qkv, 3 * N * C);
  nn_attention_backward(&c, act2(model, model->d_qkv, 3 * C), act2(model, model->d_atty, C),
                        act2(model, a->qkv, 3 * C), att);
  zero(model, model->d_ln, N * C);
  nn_matmul_backward(&c, d_ln, fsdp_unit_grad(u, BLK_QKV_W), fsdp_unit_grad(u, BLK_QKV_B),
                     act2(model, model->d_qkv, 3 * C), act2(model, a->ln1, C), fsdp_unit_param(u, BLK_QKV_W));
  nn_layernorm_backward(&c, d_residual, fsdp_unit_grad(u, BLK_LN1_W), fsdp_unit_grad(u, BLK_LN1_B), d_ln,
                        act2(model, input, C), fsdp_unit_param(u, BLK_LN1_W), act1(model, a->ln1_mean),
                        act1(model, a->ln1_rstd));
}

void gpt2_backward(struct gpt2 *model, float loss_scale) {
  const struct model_config *c = &model->config;
  size_t N = (size_t)model->B * model->T, C = (size_t)c->n_embd, V = (size_t)c->vocab_size;
  int L = c->n_layer;
  struct fsdp_unit *root = model->root;
  struct nn_ctx k = ctx(model);
  FSDP_CHECK(model->probs != NULL);

  fsdp_pre_backward(model->fsdp, root);
  release(model, &model->logits);
  release(model, &model->losses);
  /* The loss is loss_scale times the mean over the N tokens of this rank. */
  model->d_logits = activation(model, N * V);
  zero(model, model->d_logits, N * V);
  nn_softmax_crossentropy_backward(&k, act2(model, model->d_logits, V), act2(model, model->probs, V),
                                   tokens(model, model->targets), loss_scale / (float)N);
  release(model, &model->probs);
  model->d_ln = activation(model, N * C);
  zero(model, model->d_ln, N * C);
  nn_matmul_backward(&k, act2(model, model->d_ln, C), fsdp_unit_grad(root, ROOT_WTE), TENSOR_NONE,
                     act2(model, model->d_logits, V), act2(model, model->lnf, C), fsdp_unit_param(root, ROOT_WTE));
  release(model, &model->d_logits);
  release(model, &model->lnf);
  model->d_residual = activation(model, N * C);
  zero(model, model->d_residual, N * C);
  nn_layernorm_backward(&k, act2(model, model->d_residual, C), fsdp_unit_grad(root, ROOT_LNF_W),
                        fsdp_unit_grad(root, ROOT_LNF_B), act2(model, model->d_ln, C),
                        act2(model, model->acts[L - 1].residual3, C), fsdp_unit_param(root, ROOT_LNF_W),
                        act1(model, model->lnf_mean), act1(model, model->lnf_rstd));
  release(model, &model->lnf_mean);
  release(model, &model->lnf_rstd);
  model->d_qkv = activation(model, 3 * N * C);
  model->d_atty = activation(model, N * C);
  model->d_fch = activation(model, 4 * N * C);
  model->d_fch_gelu = activation(model, 4 * N * C);
  for (int l = L - 1; l >= 0; l--) {
    void *input = l == 0 ? model->encoded : model->acts[l - 1].residual3;
    fsdp_pre_backward(model->fsdp, model->blocks[l]);
    if (gpt2_is_checkpointed(model, l)) {
      block_acts_alloc(model, l);
      block_forward(model, l, input);
    }
    block_backward(model, l, input);
    block_acts_release_inner(model, l);
    release(model, &model->acts[l].residual3);
    fsdp_post_backward(model->fsdp, model->blocks[l]);
  }
  nn_encoder_backward(&k, fsdp_unit_grad(root, ROOT_WTE), fsdp_unit_grad(root, ROOT_WPE),
                      act2(model, model->d_residual, C), tokens(model, model->inputs));
  gpt2_release_activations(model);
  fsdp_post_backward(model->fsdp, root);
}

/* ---- the registry's view of GPT-2 (fsdp/model.h) ---- */

static void *create(const struct model_config *c, struct fsdp_model *fsdp, int B, int T, int ac_every) {
  struct gpt2 *model = fsdp_xmalloc(sizeof *model);
  gpt2_create(model, c, fsdp, B, T, ac_every);
  return model;
}

static void destroy(void *model) {
  gpt2_free(model);
  free(model);
}

static float forward(void *model, const int *inputs, const int *targets) {
  gpt2_forward(model, inputs, targets);
  return ((struct gpt2 *)model)->mean_loss;
}

static void backward(void *model, float loss_scale) { gpt2_backward(model, loss_scale); }
static void release_activations(void *model) { gpt2_release_activations(model); }

const struct model_family GPT2_FAMILY = {
    .name = "gpt2",
    .config_problem = gpt2_config_problem,
    .batch_problem = gpt2_batch_problem,
    .create = create,
    .free = destroy,
    .forward = forward,
    .backward = backward,
    .release_activations = release_activations,
};
