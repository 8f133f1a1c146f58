#include "fsdp/gpt2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/hf.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"

const char *gpt2_batch_problem(const struct model_config *c, int B, int T) {
  return decoder_batch_problem(B, T, "--n-embd", c->n_embd, 4 * (size_t)c->n_embd);
}

/* nanoGPT's init: weights normal(0, 0.02), the two residual projections scaled by
 * 1/sqrt(2 n_layer), biases zero, LayerNorm weights one; matrices are decayed. */
static struct param_spec matrix(const char *name, size_t rows, size_t cols, float std) {
  return (struct param_spec){name, 2, {rows, cols}, PARAM_INIT_NORMAL, std, 1, 0.0f};
}
static struct param_spec vector(const char *name, size_t n, float value) {
  return (struct param_spec){name, 1, {n}, PARAM_INIT_CONSTANT, value, 0, 0.0f};
}

static void declare_modules(struct gpt2 *model) {
  struct decoder *d = &model->base;
  const struct model_config *c = &d->config;
  size_t C = (size_t)c->n_embd;
  float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)c->n_layer);
  struct param_spec embedding[EMB_NUM_PARAMS] = {
      [EMB_WTE] = matrix("wte", (size_t)c->vocab_size, C, std),
      [EMB_WPE] = matrix("wpe", (size_t)c->max_seq_len, C, std),
  };
  struct param_spec lnf[LNF_NUM_PARAMS] = {[LNF_W] = vector("lnf.weight", C, 1.0f), [LNF_B] = vector("lnf.bias", C, 0.0f)};
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
  d->embedding = fsdp_model_add_module(d->fsdp, "embedding", "", embedding, EMB_NUM_PARAMS);
  for (int l = 0; l < c->n_layer; l++) decoder_add_block(d, l, "h.", block, BLK_NUM_PARAMS);
  d->final_norm = fsdp_model_add_module(d->fsdp, "final norm", "", lnf, LNF_NUM_PARAMS);
  /* The head is tied: logits = lnf @ wte^T. */
  d->output = fsdp_model_add_tied_module(d->fsdp, "output", d->embedding);
}

/* Activations as the kernels take them: (N, cols) or (N). */
static struct tensor act2(const struct gpt2 *model, void *data, size_t cols) {
  return decoder_act2(&model->base, data, cols);
}
static struct tensor stats(const struct gpt2 *model, void *data) { return decoder_stats(&model->base, data); }

/* A block's saved activations and their sizes in bytes, the output last. */
enum { BLOCK_ACT_BUFFERS = 15 };
static void block_act_buffers(struct decoder *d, int l, void **buffers[], size_t bytes[]) {
  struct gpt2_block_acts *a = &((struct gpt2 *)d)->acts[l];
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd;
  size_t NC = decoder_bytes(d, N * C), stat = decoder_stats_bytes(N);
  size_t lse = decoder_stats_bytes((size_t)d->B * d->config.n_head * d->T);
  void **b[BLOCK_ACT_BUFFERS] = {&a->ln1,      &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty,
                                 &a->lse,      &a->attproj,  &a->residual2, &a->ln2, &a->ln2_mean,
                                 &a->ln2_rstd, &a->fch,      &a->fch_gelu, &a->fcproj, &a->residual3};
  size_t e[BLOCK_ACT_BUFFERS] = {NC,   stat, stat,    3 * NC, NC,     lse,    NC, NC,
                                 NC,   stat, stat,    4 * NC, 4 * NC, NC,     NC};
  memcpy(buffers, b, sizeof b);
  memcpy(bytes, e, sizeof e);
}

static void block_forward(struct decoder *d, int l, void *input);
static void block_backward(struct decoder *d, int l, void *input);
static const struct decoder_block BLOCK = {BLOCK_ACT_BUFFERS, block_act_buffers, block_forward, block_backward};

void gpt2_release_activations(struct gpt2 *model) {
  void **const own[] = {&model->lnf,   &model->lnf_mean, &model->lnf_rstd, &model->d_ln,
                        &model->d_qkv, &model->d_atty,   &model->d_fch,    &model->d_fch_gelu};
  decoder_release_all(&model->base, own, sizeof own / sizeof own[0]);
  decoder_release_activations(&model->base, &BLOCK);
}

void gpt2_create(struct gpt2 *model, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                 int ac_every) {
  FSDP_CHECK(decoder_config_problem(config) == NULL && gpt2_batch_problem(config, B, T) == NULL);
  memset(model, 0, sizeof *model);
  decoder_init(&model->base, config, fsdp, B, T, ac_every);
  declare_modules(model);
  model->acts = fsdp_xcalloc((size_t)config->n_layer, sizeof *model->acts);
}

void gpt2_free(struct gpt2 *model) {
  gpt2_release_activations(model);
  decoder_free(&model->base);
  free(model->acts);
  memset(model, 0, sizeof *model);
}

/* x -> x + attn(ln1(x)) -> (that) + mlp(ln2(that)) */
static void block_forward(struct decoder *d, int l, void *input) {
  struct gpt2 *model = (struct gpt2 *)d;
  int u = d->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  struct nn_ctx c = decoder_ctx(d);
  size_t C = (size_t)d->config.n_embd;
  nn_layernorm_forward(&c, act2(model, a->ln1, C), stats(model, a->ln1_mean), stats(model, a->ln1_rstd),
                       act2(model, input, C), decoder_param(d, u, BLK_LN1_W), decoder_param(d, u, BLK_LN1_B));
  nn_matmul_forward(&c, act2(model, a->qkv, 3 * C), act2(model, a->ln1, C), decoder_param(d, u, BLK_QKV_W),
                    decoder_param(d, u, BLK_QKV_B));
  nn_attention_forward(&c, act2(model, a->atty, C), decoder_lse(d, a->lse), act2(model, a->qkv, 3 * C));
  nn_matmul_forward(&c, act2(model, a->attproj, C), act2(model, a->atty, C), decoder_param(d, u, BLK_ATTPROJ_W),
                    decoder_param(d, u, BLK_ATTPROJ_B));
  nn_residual_forward(&c, act2(model, a->residual2, C), act2(model, input, C), act2(model, a->attproj, C));
  nn_layernorm_forward(&c, act2(model, a->ln2, C), stats(model, a->ln2_mean), stats(model, a->ln2_rstd),
                       act2(model, a->residual2, C), decoder_param(d, u, BLK_LN2_W), decoder_param(d, u, BLK_LN2_B));
  nn_matmul_forward(&c, act2(model, a->fch, 4 * C), act2(model, a->ln2, C), decoder_param(d, u, BLK_FC_W),
                    decoder_param(d, u, BLK_FC_B));
  nn_gelu_forward(&c, act2(model, a->fch_gelu, 4 * C), act2(model, a->fch, 4 * C));
  nn_matmul_forward(&c, act2(model, a->fcproj, C), act2(model, a->fch_gelu, 4 * C), decoder_param(d, u, BLK_FCPROJ_W),
                    decoder_param(d, u, BLK_FCPROJ_B));
  nn_residual_forward(&c, act2(model, a->residual3, C), act2(model, a->residual2, C), act2(model, a->fcproj, C));
}

void gpt2_forward(struct gpt2 *model, const int *inputs, const int *targets) {
  struct decoder *d = &model->base;
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd;
  struct nn_ctx k = decoder_ctx(d);
  gpt2_release_activations(model); /* of a forward without backward (an evaluation) */
  decoder_load_batch(d, inputs, targets);

  fsdp_pre_forward(d->fsdp, d->embedding);
  d->encoded = decoder_alloc(d, N * C);
  nn_encoder_forward(&k, act2(model, d->encoded, C), decoder_tokens(d, d->inputs),
                     decoder_param(d, d->embedding, EMB_WTE), decoder_param(d, d->embedding, EMB_WPE));
  fsdp_post_forward(d->fsdp, d->embedding);
  void *residual = decoder_blocks_forward(d, &BLOCK);
  fsdp_pre_forward(d->fsdp, d->final_norm);
  model->lnf = decoder_alloc(d, N * C);
  model->lnf_mean = decoder_alloc_stats(d, N);
  model->lnf_rstd = decoder_alloc_stats(d, N);
  nn_layernorm_forward(&k, act2(model, model->lnf, C), stats(model, model->lnf_mean), stats(model, model->lnf_rstd),
                       act2(model, residual, C), decoder_param(d, d->final_norm, LNF_W),
                       decoder_param(d, d->final_norm, LNF_B));
  fsdp_post_forward(d->fsdp, d->final_norm);
  fsdp_pre_forward(d->fsdp, d->output);
  decoder_loss_forward(d, decoder_param(d, d->output, EMB_WTE), model->lnf);
  fsdp_post_forward(d->fsdp, d->output);
  decoder_add_loss(d);
}

/* On entry d_residual holds dL/d(block output); on exit dL/d(block input). The
 * residual connections pass d_residual through unchanged, so each branch's
 * LayerNorm backward accumulates into it in place. */
static void block_backward(struct decoder *d, int l, void *input) {
  struct gpt2 *model = (struct gpt2 *)d;
  int u = d->blocks[l];
  struct gpt2_block_acts *a = &model->acts[l];
  struct nn_ctx c = decoder_ctx(d);
  size_t C = (size_t)d->config.n_embd;
  struct tensor d_residual = act2(model, d->d_residual, C), d_ln = act2(model, model->d_ln, C);

  nn_matmul_backward(&c, act2(model, model->d_fch_gelu, 4 * C), NN_GRAD_SET, decoder_grad(d, u, BLK_FCPROJ_W),
                     decoder_grad(d, u, BLK_FCPROJ_B), d_residual, act2(model, a->fch_gelu, 4 * C),
                     decoder_param(d, u, BLK_FCPROJ_W));
  nn_gelu_backward(&c, act2(model, model->d_fch, 4 * C), NN_GRAD_SET, act2(model, a->fch, 4 * C),
                   act2(model, model->d_fch_gelu, 4 * C));
  nn_matmul_backward(&c, d_ln, NN_GRAD_SET, decoder_grad(d, u, BLK_FC_W), decoder_grad(d, u, BLK_FC_B),
                     act2(model, model->d_fch, 4 * C), act2(model, a->ln2, C), decoder_param(d, u, BLK_FC_W));
  nn_layernorm_backward(&c, d_residual, decoder_grad(d, u, BLK_LN2_W), decoder_grad(d, u, BLK_LN2_B), d_ln,
                        act2(model, a->residual2, C), decoder_param(d, u, BLK_LN2_W), stats(model, a->ln2_mean),
                        stats(model, a->ln2_rstd));

  nn_matmul_backward(&c, act2(model, model->d_atty, C), NN_GRAD_SET, decoder_grad(d, u, BLK_ATTPROJ_W),
                     decoder_grad(d, u, BLK_ATTPROJ_B), d_residual, act2(model, a->atty, C),
                     decoder_param(d, u, BLK_ATTPROJ_W));
  nn_attention_backward(&c, act2(model, model->d_qkv, 3 * C), NN_GRAD_SET, act2(model, model->d_atty, C),
                        act2(model, a->qkv, 3 * C), act2(model, a->atty, C), decoder_lse(d, a->lse));
  nn_matmul_backward(&c, d_ln, NN_GRAD_SET, decoder_grad(d, u, BLK_QKV_W), decoder_grad(d, u, BLK_QKV_B),
                     act2(model, model->d_qkv, 3 * C), act2(model, a->ln1, C), decoder_param(d, u, BLK_QKV_W));
  nn_layernorm_backward(&c, d_residual, decoder_grad(d, u, BLK_LN1_W), decoder_grad(d, u, BLK_LN1_B), d_ln,
                        act2(model, input, C), decoder_param(d, u, BLK_LN1_W), stats(model, a->ln1_mean),
                        stats(model, a->ln1_rstd));
}

void gpt2_backward(struct gpt2 *model, float loss_scale) {
  struct decoder *d = &model->base;
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd;
  struct nn_ctx k = decoder_ctx(d);

  fsdp_pre_backward(d->fsdp, d->output);
  model->d_ln = decoder_loss_backward(d, loss_scale, decoder_param(d, d->output, EMB_WTE),
                                      decoder_grad(d, d->output, EMB_WTE), model->lnf);
  fsdp_post_backward(d->fsdp, d->output);
  decoder_release(d, &model->lnf);
  fsdp_pre_backward(d->fsdp, d->final_norm);
  d->d_residual = decoder_alloc(d, N * C);
  decoder_zero(d, d->d_residual, N * C);
  nn_layernorm_backward(&k, act2(model, d->d_residual, C), decoder_grad(d, d->final_norm, LNF_W),
                        decoder_grad(d, d->final_norm, LNF_B), act2(model, model->d_ln, C),
                        act2(model, model->acts[d->config.n_layer - 1].residual3, C),
                        decoder_param(d, d->final_norm, LNF_W), stats(model, model->lnf_mean),
                        stats(model, model->lnf_rstd));
  fsdp_post_backward(d->fsdp, d->final_norm);
  decoder_release(d, &model->lnf_mean);
  decoder_release(d, &model->lnf_rstd);
  model->d_qkv = decoder_alloc(d, 3 * N * C);
  model->d_atty = decoder_alloc(d, N * C);
  model->d_fch = decoder_alloc(d, 4 * N * C);
  model->d_fch_gelu = decoder_alloc(d, 4 * N * C);
  decoder_blocks_backward(d, &BLOCK);
  fsdp_pre_backward(d->fsdp, d->embedding);
  nn_encoder_backward(&k, decoder_grad(d, d->embedding, EMB_WTE), decoder_grad(d, d->embedding, EMB_WPE),
                      act2(model, d->d_residual, C), decoder_tokens(d, d->inputs));
  gpt2_release_activations(model);
  fsdp_post_backward(d->fsdp, d->embedding);
}

/* The registry's view of GPT-2 (fsdp/model.h). */
DECODER_FAMILY(GPT2_FAMILY, "gpt2", gpt2, decoder_config_problem, gpt2_batch_problem, &GPT2_HF_FORMAT);
