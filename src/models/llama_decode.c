/* Llama 3's decode step with a KV cache (fsdp/llama.h): the forward of llama.c for n new
 * tokens only, their rotated keys and their values kept for the steps after. */
#include "fsdp/llama.h"

/* The step's activations: (n, C), (n, NH hd), (n, F), and the norms' rstd (n, fp32). */
struct step {
  struct llama *model;
  struct kv_cache *cache;
  int n;
  void *x, *norm, *rstd, *q, *atty, *proj, *gate, *up, *swiglu;
};

static struct tensor rows(const struct step *s, void *data, size_t cols) {
  return decoder_rows(&s->model->base, data, s->n, cols);
}
static struct tensor rstd(const struct step *s) { return tensor_1d(s->rstd, DTYPE_F32, (size_t)s->n); }

/* Rows [P, P + n) of the RoPE table: a (1, n, heads, hd) view turns by positions P ... */
static struct tensor table_from(const struct step *s) {
  const struct decoder *d = &s->model->base;
  size_t hd = (size_t)(d->config.n_embd / d->config.n_head), P = (size_t)s->cache->len;
  struct tensor table = tensor_2d(s->model->rope, d->dtype, (size_t)d->config.max_seq_len, hd);
  return decoder_param_rows(table, P, table.shape[0] - P);
}
static struct tensor heads(const struct step *s, struct tensor rows_view, int n_heads) {
  const struct decoder *d = &s->model->base;
  size_t hd = (size_t)(d->config.n_embd / d->config.n_head);
  return tensor_4d(rows_view.data, d->dtype, 1, (size_t)s->n, (size_t)n_heads, hd);
}

/* x -> h = x + wo(attention(rope(wq n), cache of rope(wk n), cache of wv n)), n = attention_norm(x)
 *   -> h + w2(silu(w1 m) * w3 m), m = ffn_norm(h); the new positions' keys and values go
 *   straight into the cache. */
static void block_decode(struct step *s, int l) {
  struct decoder *d = &s->model->base;
  const struct model_config *cf = &d->config;
  int u = d->blocks[l];
  struct nn_ctx c = decoder_ctx(d);
  size_t C = (size_t)cf->n_embd, F = (size_t)cf->ffn_hidden, hd = C / (size_t)cf->n_head;
  size_t Q = (size_t)cf->n_head * hd;
  struct tensor x = rows(s, s->x, C), norm = rows(s, s->norm, C), q = rows(s, s->q, Q);
  struct tensor k = decoder_cache_new(d, s->cache, s->cache->k[l], s->n);
  struct tensor v = decoder_cache_new(d, s->cache, s->cache->v[l], s->n);
  nn_rmsnorm_forward(&c, norm, rstd(s), x, decoder_param(d, u, LLAMA_ATTN_NORM), cf->norm_eps);
  nn_matmul_forward(&c, q, norm, decoder_param(d, u, LLAMA_WQ), TENSOR_NONE);
  nn_matmul_forward(&c, k, norm, decoder_param(d, u, LLAMA_WK), TENSOR_NONE);
  nn_matmul_forward(&c, v, norm, decoder_param(d, u, LLAMA_WV), TENSOR_NONE);
  nn_rope_forward(&c, heads(s, q, cf->n_head), heads(s, q, cf->n_head), table_from(s));
  nn_rope_forward(&c, heads(s, k, cf->n_kv_head), heads(s, k, cf->n_kv_head), table_from(s));
  struct tensor q3 = {s->q, d->dtype, 3, {(size_t)s->n, (size_t)cf->n_head, hd}};
  nn_cached_attention_forward(&c, rows(s, s->atty, Q), q3, decoder_cache_all(d, s->cache, s->cache->k[l], s->n),
                              decoder_cache_all(d, s->cache, s->cache->v[l], s->n));
  nn_matmul_forward(&c, rows(s, s->proj, C), rows(s, s->atty, Q), decoder_param(d, u, LLAMA_WO), TENSOR_NONE);
  nn_residual_forward(&c, x, x, rows(s, s->proj, C));
  nn_rmsnorm_forward(&c, norm, rstd(s), x, decoder_param(d, u, LLAMA_FFN_NORM), cf->norm_eps);
  nn_matmul_forward(&c, rows(s, s->gate, F), norm, decoder_param(d, u, LLAMA_W1), TENSOR_NONE);
  nn_matmul_forward(&c, rows(s, s->up, F), norm, decoder_param(d, u, LLAMA_W3), TENSOR_NONE);
  nn_swiglu_forward(&c, rows(s, s->swiglu, F), rows(s, s->gate, F), rows(s, s->up, F));
  nn_matmul_forward(&c, rows(s, s->proj, C), rows(s, s->swiglu, F), decoder_param(d, u, LLAMA_W2), TENSOR_NONE);
  nn_residual_forward(&c, x, x, rows(s, s->proj, C));
}

/* x = tok_embeddings[tokens]; the blocks; logits = norm(x[n - 1]) @ output^T. */
void llama_decode(struct llama *model, struct kv_cache *cache, const int *tokens, int n, float *logits) {
  struct decoder *d = &model->base;
  const struct model_config *cf = &d->config;
  size_t C = (size_t)cf->n_embd, F = (size_t)cf->ffn_hidden, N = (size_t)n;
  size_t Q = C / (size_t)cf->n_head * (size_t)cf->n_head;
  struct nn_ctx k = decoder_ctx(d);
  struct step s = {model, cache, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  void **const buffers[] = {&s.x, &s.norm, &s.rstd, &s.q, &s.atty, &s.proj, &s.gate, &s.up, &s.swiglu};
  size_t NC = decoder_bytes(d, N * C), NQ = decoder_bytes(d, N * Q), NF = decoder_bytes(d, N * F);
  size_t bytes[] = {NC, NC, decoder_stats_bytes(N), NQ, NQ, NC, NF, NF, NF};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) *buffers[i] = decoder_alloc_bytes(d, bytes[i]);
  struct tensor ids = decoder_upload_tokens(d, tokens, n);

  fsdp_pre_forward(d->fsdp, d->embedding);
  nn_encoder_forward(&k, rows(&s, s.x, C), ids, decoder_param(d, d->embedding, 0), TENSOR_NONE);
  fsdp_post_forward(d->fsdp, d->embedding);
  for (int l = 0; l < cf->n_layer; l++) {
    fsdp_pre_forward(d->fsdp, d->blocks[l]);
    block_decode(&s, l);
    fsdp_post_forward(d->fsdp, d->blocks[l]);
  }
  void *last = (char *)s.x + (N - 1) * C * dtype_size(d->dtype);
  fsdp_pre_forward(d->fsdp, d->final_norm);
  nn_rmsnorm_forward(&k, decoder_rows(d, s.norm, 1, C), tensor_1d(s.rstd, DTYPE_F32, 1), decoder_rows(d, last, 1, C),
                     decoder_param(d, d->final_norm, 0), cf->norm_eps);
  fsdp_post_forward(d->fsdp, d->final_norm);
  fsdp_pre_forward(d->fsdp, d->output);
  decoder_logits_to_host(d, decoder_param(d, d->output, 0), s.norm, logits);
  fsdp_post_forward(d->fsdp, d->output);

  decoder_release(d, &ids.data);
  decoder_release_all(d, buffers, sizeof buffers / sizeof buffers[0]);
  decoder_decode_done(d, cache, n);
}
