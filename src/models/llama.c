#include "fsdp/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/hf.h"

static const char *llama_config_problem(const struct model_config *c) {
  static char message[160];
  const char *shared = decoder_config_problem(c);
  if (shared) return shared;
  if (c->n_kv_head < 1) return "--n-kv-head must be at least 1";
  if (c->ffn_hidden < 1) return "--ffn-hidden must be at least 1";
  /* RoPE's frequencies are theta^(-2i/hd): at or below 1 they grow with i, to infinity as
   * theta nears 0. */
  if (!(c->rope_theta > 1.0f)) return "rope_theta must be above 1";
  if (c->n_head % c->n_kv_head != 0)
    snprintf(message, sizeof message, "--n-head %d is not divisible by --n-kv-head %d", c->n_head, c->n_kv_head);
  else if (c->n_embd / c->n_head % 2 != 0)
    snprintf(message, sizeof message, "--n-embd %d / --n-head %d is an odd head dimension: RoPE turns pairs",
             c->n_embd, c->n_head);
  else
    return NULL;
  return message;
}

const char *llama_batch_problem(const struct model_config *c, int B, int T) {
  /* The widest activations are the SwiGLU's (N, F), or the residual stream's (N, C). */
  if (c->ffn_hidden >= c->n_embd)
    return decoder_batch_problem(B, T, "--ffn-hidden", c->ffn_hidden, (size_t)c->ffn_hidden);
  return decoder_batch_problem(B, T, "--n-embd", c->n_embd, (size_t)c->n_embd);
}

static int head_dim(const struct model_config *c) { return c->n_embd / c->n_head; }

/* The widths a model works with: N rows of C, F, q = NH hd and kv = NKV hd columns. */
struct widths {
  size_t N, C, F, q, kv;
};
static struct widths widths_of(const struct decoder *d) {
  const struct model_config *c = &d->config;
  size_t hd = (size_t)head_dim(c);
  return (struct widths){(size_t)d->B * d->T, (size_t)c->n_embd, (size_t)c->ffn_hidden, c->n_head * hd,
                         c->n_kv_head * hd};
}

/* torchtitan's init (models/llama3/model/model.py, init_weights, depth_init): the token
 * embedding normal(0, 1); in block l, wq, wk, wv and w1 truncated normal(0, 0.02), wo,
 * w2 and w3 the same with 0.02 / sqrt(2 (l + 1)), all within torch's default bounds of
 * +-2 (absolute: 100 std, which no draw reaches); norm weights one; the output projection
 * truncated normal(0, C^-1/2) within 3 std. A tied matrix is initialised as the output
 * projection: from normal(0, 1) the first logits would be sqrt(C) wide. Matrices decay. */
static const float TORCHTITAN_BOUND = 2.0f, OUTPUT_CUTOFF = 3.0f;

static struct param_spec matrix(const char *name, size_t rows, size_t cols, float std, float bound) {
  return (struct param_spec){name, 2, {rows, cols}, PARAM_INIT_TRUNC_NORMAL, std, 1, bound};
}
static struct param_spec norm(const char *name, size_t n) {
  return (struct param_spec){name, 1, {n}, PARAM_INIT_CONSTANT, 1.0f, 0, 0.0f};
}

static void declare_modules(struct llama *model) {
  struct decoder *d = &model->base;
  const struct model_config *c = &d->config;
  struct widths w = widths_of(d);
  size_t C = w.C, V = (size_t)c->vocab_size, F = w.F;
  float output_std = 1.0f / sqrtf((float)C), output_bound = OUTPUT_CUTOFF * output_std;
  struct param_spec embedding = c->tied ? matrix("tok_embeddings.weight", V, C, output_std, output_bound)
                                        : (struct param_spec){"tok_embeddings.weight", 2, {V, C}, PARAM_INIT_NORMAL,
                                                              1.0f, 1, 0.0f};
  struct param_spec final_norm = norm("norm.weight", C);
  struct param_spec output = matrix("output.weight", V, C, output_std, output_bound);
  d->embedding = fsdp_model_add_module(d->fsdp, "embedding", "", &embedding, 1);
  for (int l = 0; l < c->n_layer; l++) {
    float std = 0.02f, depth_std = 0.02f / sqrtf(2.0f * (float)(l + 1));
    struct param_spec block[LLAMA_BLOCK_PARAMS] = {
        [LLAMA_ATTN_NORM] = norm("attention_norm.weight", C),
        [LLAMA_WQ] = matrix("attention.wq.weight", w.q, C, std, TORCHTITAN_BOUND),
        [LLAMA_WK] = matrix("attention.wk.weight", w.kv, C, std, TORCHTITAN_BOUND),
        [LLAMA_WV] = matrix("attention.wv.weight", w.kv, C, std, TORCHTITAN_BOUND),
        [LLAMA_WO] = matrix("attention.wo.weight", C, w.q, depth_std, TORCHTITAN_BOUND),
        [LLAMA_FFN_NORM] = norm("ffn_norm.weight", C),
        [LLAMA_W1] = matrix("feed_forward.w1.weight", F, C, std, TORCHTITAN_BOUND),
        [LLAMA_W3] = matrix("feed_forward.w3.weight", F, C, depth_std, TORCHTITAN_BOUND),
        [LLAMA_W2] = matrix("feed_forward.w2.weight", C, F, depth_std, TORCHTITAN_BOUND),
    };
    decoder_add_block(d, l, "layers.", block, LLAMA_BLOCK_PARAMS);
  }
  d->final_norm = fsdp_model_add_module(d->fsdp, "final norm", "", &final_norm, 1);
  d->output = c->tied ? fsdp_model_add_tied_module(d->fsdp, "output", d->embedding)
                      : fsdp_model_add_module(d->fsdp, "output", "", &output, 1);
}

/* Activations as the kernels take them: (N, cols), (N), and (B, T, heads, hd). */
static struct tensor act2(const struct llama *model, void *data, size_t cols) {
  return decoder_act2(&model->base, data, cols);
}
static struct tensor stats(const struct llama *model, void *data) { return decoder_stats(&model->base, data); }
static struct tensor heads(const struct llama *model, void *data, int n_heads) {
  const struct decoder *d = &model->base;
  return tensor_4d(data, d->dtype, (size_t)d->B, (size_t)d->T, (size_t)n_heads, (size_t)head_dim(&d->config));
}
static struct tensor q_heads(const struct llama *model, void *data) {
  return heads(model, data, model->base.config.n_head);
}
static struct tensor kv_heads(const struct llama *model, void *data) {
  return heads(model, data, model->base.config.n_kv_head);
}
static struct tensor rope_table(const struct llama *model) {
  const struct decoder *d = &model->base;
  return tensor_2d(model->rope, d->dtype, (size_t)d->config.max_seq_len, (size_t)head_dim(&d->config));
}

/* A block's saved activations and their sizes in bytes, the output last. */
enum { BLOCK_ACT_BUFFERS = 16 };
static void block_act_buffers(struct decoder *d, int l, void **buffers[], size_t bytes[]) {
  struct llama_block_acts *a = &((struct llama *)d)->acts[l];
  struct widths w = widths_of(d);
  size_t N = w.N, NC = decoder_bytes(d, N * w.C), NF = decoder_bytes(d, N * w.F), stat = decoder_stats_bytes(N);
  size_t q = decoder_bytes(d, N * w.q), kv = decoder_bytes(d, N * w.kv);
  size_t lse = decoder_stats_bytes((size_t)d->B * d->config.n_head * d->T);
  void **b[BLOCK_ACT_BUFFERS] = {&a->attn_norm, &a->attn_rstd, &a->q, &a->k, &a->v, &a->lse, &a->atty, &a->attproj,
                                 &a->h, &a->ffn_norm, &a->ffn_rstd, &a->gate, &a->up, &a->swiglu, &a->down, &a->out};
  size_t e[BLOCK_ACT_BUFFERS] = {NC, stat, q, kv, kv, lse, q, NC, NC, NC, stat, NF, NF, NF, NC, NC};
  memcpy(buffers, b, sizeof b);
  memcpy(bytes, e, sizeof e);
}

static void block_forward(struct decoder *d, int l, void *input);
static void block_backward(struct decoder *d, int l, void *input);
static const struct decoder_block BLOCK = {BLOCK_ACT_BUFFERS, block_act_buffers, block_forward, block_backward};

void llama_release_activations(struct llama *model) {
  void **const own[] = {&model->norm, &model->norm_rstd, &model->d_norm,   &model->d_atty, &model->d_q,
                        &model->d_k,  &model->d_v,       &model->d_swiglu, &model->d_gate, &model->d_up};
  decoder_release_all(&model->base, own, sizeof own / sizeof own[0]);
  decoder_release_activations(&model->base, &BLOCK);
}

void llama_create(struct llama *model, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                  int ac_every) {
  FSDP_CHECK(llama_config_problem(config) == NULL && llama_batch_problem(config, B, T) == NULL);
  memset(model, 0, sizeof *model);
  struct decoder *d = &model->base;
  decoder_init(d, config, fsdp, B, T, ac_every);
  declare_modules(model);
  model->acts = fsdp_xcalloc((size_t)config->n_layer, sizeof *model->acts);
  /* A constant of the model, built once on the device (on the meta device, planned). */
  struct nn_rope rope = {config->rope_theta, config->rope_factor, config->rope_low_freq_factor,
                         config->rope_high_freq_factor, config->rope_original_max_seq_len};
  model->rope = decoder_alloc(d, (size_t)config->max_seq_len * head_dim(config));
  struct nn_ctx k = decoder_ctx(d);
  nn_rope_table(&k, rope_table(model), &rope);
}

void llama_free(struct llama *model) {
  llama_release_activations(model);
  decoder_release(&model->base, &model->rope);
  decoder_free(&model->base);
  free(model->acts);
  memset(model, 0, sizeof *model);
}

/* x -> h = x + wo(attention(rope(wq n), rope(wk n), wv n)), n = attention_norm(x)
 *   -> h + w2(silu(w1 m) * w3 m), m = ffn_norm(h) */
static void block_forward(struct decoder *d, int l, void *input) {
  struct llama *model = (struct llama *)d;
  int u = d->blocks[l];
  struct llama_block_acts *a = &model->acts[l];
  struct nn_ctx c = decoder_ctx(d);
  struct widths w = widths_of(d);
  struct tensor q = q_heads(model, a->q), k = kv_heads(model, a->k), table = rope_table(model);
  struct tensor n = act2(model, a->attn_norm, w.C), m = act2(model, a->ffn_norm, w.C);
  nn_rmsnorm_forward(&c, n, stats(model, a->attn_rstd), act2(model, input, w.C), decoder_param(d, u, LLAMA_ATTN_NORM),
                     d->config.norm_eps);
  nn_matmul_forward(&c, act2(model, a->q, w.q), n, decoder_param(d, u, LLAMA_WQ), TENSOR_NONE);
  nn_matmul_forward(&c, act2(model, a->k, w.kv), n, decoder_param(d, u, LLAMA_WK), TENSOR_NONE);
  nn_matmul_forward(&c, act2(model, a->v, w.kv), n, decoder_param(d, u, LLAMA_WV), TENSOR_NONE);
  nn_rope_forward(&c, q, q, table);
  nn_rope_forward(&c, k, k, table);
  nn_gqa_attention_forward(&c, act2(model, a->atty, w.q), decoder_lse(d, a->lse), q, k,
                           kv_heads(model, a->v));
  nn_matmul_forward(&c, act2(model, a->attproj, w.C), act2(model, a->atty, w.q), decoder_param(d, u, LLAMA_WO),
                    TENSOR_NONE);
  nn_residual_forward(&c, act2(model, a->h, w.C), act2(model, input, w.C), act2(model, a->attproj, w.C));
  nn_rmsnorm_forward(&c, m, stats(model, a->ffn_rstd), act2(model, a->h, w.C), decoder_param(d, u, LLAMA_FFN_NORM),
                     d->config.norm_eps);
  nn_matmul_forward(&c, act2(model, a->gate, w.F), m, decoder_param(d, u, LLAMA_W1), TENSOR_NONE);
  nn_matmul_forward(&c, act2(model, a->up, w.F), m, decoder_param(d, u, LLAMA_W3), TENSOR_NONE);
  nn_swiglu_forward(&c, act2(model, a->swiglu, w.F), act2(model, a->gate, w.F), act2(model, a->up, w.F));
  nn_matmul_forward(&c, act2(model, a->down, w.C), act2(model, a->swiglu, w.F), decoder_param(d, u, LLAMA_W2),
                    TENSOR_NONE);
  nn_residual_forward(&c, act2(model, a->out, w.C), act2(model, a->h, w.C), act2(model, a->down, w.C));
}

void llama_forward(struct llama *model, const int *inputs, const int *targets) {
  struct decoder *d = &model->base;
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd;
  struct nn_ctx k = decoder_ctx(d);
  llama_release_activations(model); /* of a forward without backward (an evaluation) */
  decoder_load_batch(d, inputs, targets);

  fsdp_pre_forward(d->fsdp, d->embedding);
  d->encoded = decoder_alloc(d, N * C);
  nn_encoder_forward(&k, act2(model, d->encoded, C), decoder_tokens(d, d->inputs), decoder_param(d, d->embedding, 0),
                     TENSOR_NONE);
  fsdp_post_forward(d->fsdp, d->embedding);
  void *residual = decoder_blocks_forward(d, &BLOCK);
  fsdp_pre_forward(d->fsdp, d->final_norm);
  model->norm = decoder_alloc(d, N * C);
  model->norm_rstd = decoder_alloc_stats(d, N);
  nn_rmsnorm_forward(&k, act2(model, model->norm, C), stats(model, model->norm_rstd), act2(model, residual, C),
                     decoder_param(d, d->final_norm, 0), d->config.norm_eps);
  fsdp_post_forward(d->fsdp, d->final_norm);
  fsdp_pre_forward(d->fsdp, d->output);
  decoder_loss_forward(d, decoder_param(d, d->output, 0), model->norm);
  fsdp_post_forward(d->fsdp, d->output);
  decoder_add_loss(d);
}

/* The gradient through x -> rope(x) with x = n @ w^T, w one of wq and wk: d_rotated
 * (heads of cols / hd) turned back into d_atty's first rows, then written (mode) or
 * accumulated into d_norm, and accumulated into dw. */
static void rotated_projection_backward(struct llama *model, int u, int param, void *d_rotated,
                                        size_t cols, void *n, enum nn_grad mode) {
  struct decoder *d = &model->base;
  struct nn_ctx c = decoder_ctx(d);
  struct widths w = widths_of(d);
  int n_heads = (int)(cols / (size_t)head_dim(&d->config));
  decoder_zero(d, model->d_atty, w.N * cols);
  nn_rope_backward(&c, heads(model, model->d_atty, n_heads), heads(model, d_rotated, n_heads), rope_table(model));
  nn_matmul_backward(&c, act2(model, model->d_norm, w.C), mode, decoder_grad(d, u, param), TENSOR_NONE,
                     act2(model, model->d_atty, cols), act2(model, n, w.C), decoder_param(d, u, param));
}

/* On entry d_residual holds dL/d(block output); on exit dL/d(block input). The
 * residual connections pass d_residual through unchanged, so each branch's RMSNorm
 * backward accumulates into it in place; the projections that share a norm's output
 * accumulate into d_norm. */
static void block_backward(struct decoder *d, int l, void *input) {
  struct llama *model = (struct llama *)d;
  int u = d->blocks[l];
  struct llama_block_acts *a = &model->acts[l];
  struct nn_ctx c = decoder_ctx(d);
  struct widths w = widths_of(d);
  struct tensor d_residual = act2(model, d->d_residual, w.C), d_norm = act2(model, model->d_norm, w.C);

  nn_matmul_backward(&c, act2(model, model->d_swiglu, w.F), NN_GRAD_SET, decoder_grad(d, u, LLAMA_W2), TENSOR_NONE,
                     d_residual, act2(model, a->swiglu, w.F), decoder_param(d, u, LLAMA_W2));
  nn_swiglu_backward(&c, act2(model, model->d_gate, w.F), act2(model, model->d_up, w.F), NN_GRAD_SET,
                     act2(model, model->d_swiglu, w.F), act2(model, a->gate, w.F), act2(model, a->up, w.F));
  nn_matmul_backward(&c, d_norm, NN_GRAD_SET, decoder_grad(d, u, LLAMA_W1), TENSOR_NONE,
                     act2(model, model->d_gate, w.F), act2(model, a->ffn_norm, w.C), decoder_param(d, u, LLAMA_W1));
  nn_matmul_backward(&c, d_norm, NN_GRAD_ADD, decoder_grad(d, u, LLAMA_W3), TENSOR_NONE,
                     act2(model, model->d_up, w.F), act2(model, a->ffn_norm, w.C), decoder_param(d, u, LLAMA_W3));
  nn_rmsnorm_backward(&c, d_residual, decoder_grad(d, u, LLAMA_FFN_NORM), d_norm, act2(model, a->h, w.C),
                      decoder_param(d, u, LLAMA_FFN_NORM), stats(model, a->ffn_rstd));

  nn_matmul_backward(&c, act2(model, model->d_atty, w.q), NN_GRAD_SET, decoder_grad(d, u, LLAMA_WO), TENSOR_NONE,
                     d_residual, act2(model, a->atty, w.q), decoder_param(d, u, LLAMA_WO));
  nn_gqa_attention_backward(&c, q_heads(model, model->d_q), kv_heads(model, model->d_k), kv_heads(model, model->d_v),
                            NN_GRAD_SET, act2(model, model->d_atty, w.q), q_heads(model, a->q), kv_heads(model, a->k),
                            kv_heads(model, a->v), act2(model, a->atty, w.q), decoder_lse(d, a->lse));
  rotated_projection_backward(model, u, LLAMA_WQ, model->d_q, w.q, a->attn_norm, NN_GRAD_SET);
  rotated_projection_backward(model, u, LLAMA_WK, model->d_k, w.kv, a->attn_norm, NN_GRAD_ADD);
  nn_matmul_backward(&c, d_norm, NN_GRAD_ADD, decoder_grad(d, u, LLAMA_WV), TENSOR_NONE,
                     act2(model, model->d_v, w.kv), act2(model, a->attn_norm, w.C), decoder_param(d, u, LLAMA_WV));
  nn_rmsnorm_backward(&c, d_residual, decoder_grad(d, u, LLAMA_ATTN_NORM), d_norm, act2(model, input, w.C),
                      decoder_param(d, u, LLAMA_ATTN_NORM), stats(model, a->attn_rstd));
}

void llama_backward(struct llama *model, float loss_scale) {
  struct decoder *d = &model->base;
  struct widths w = widths_of(d);
  size_t N = w.N, C = w.C;
  struct nn_ctx k = decoder_ctx(d);

  fsdp_pre_backward(d->fsdp, d->output);
  model->d_norm = decoder_loss_backward(d, loss_scale, decoder_param(d, d->output, 0), decoder_grad(d, d->output, 0),
                                        model->norm);
  fsdp_post_backward(d->fsdp, d->output);
  decoder_release(d, &model->norm);
  fsdp_pre_backward(d->fsdp, d->final_norm);
  d->d_residual = decoder_alloc(d, N * C);
  decoder_zero(d, d->d_residual, N * C);
  nn_rmsnorm_backward(&k, act2(model, d->d_residual, C), decoder_grad(d, d->final_norm, 0),
                      act2(model, model->d_norm, C), act2(model, model->acts[d->config.n_layer - 1].out, C),
                      decoder_param(d, d->final_norm, 0), stats(model, model->norm_rstd));
  fsdp_post_backward(d->fsdp, d->final_norm);
  decoder_release(d, &model->norm_rstd);
  model->d_atty = decoder_alloc(d, N * w.q);
  model->d_q = decoder_alloc(d, N * w.q);
  model->d_k = decoder_alloc(d, N * w.kv);
  model->d_v = decoder_alloc(d, N * w.kv);
  model->d_swiglu = decoder_alloc(d, N * w.F);
  model->d_gate = decoder_alloc(d, N * w.F);
  model->d_up = decoder_alloc(d, N * w.F);
  decoder_blocks_backward(d, &BLOCK);
  fsdp_pre_backward(d->fsdp, d->embedding);
  nn_encoder_backward(&k, decoder_grad(d, d->embedding, 0), TENSOR_NONE, act2(model, d->d_residual, C),
                      decoder_tokens(d, d->inputs));
  llama_release_activations(model);
  fsdp_post_backward(d->fsdp, d->embedding);
}

/* The registry's view of Llama 3 (fsdp/model.h). */
DECODER_FAMILY(LLAMA3_FAMILY, "llama3", llama, llama_config_problem, llama_batch_problem, &LLAMA3_HF_FORMAT);
