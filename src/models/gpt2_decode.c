/* GPT-2's decode step with a KV cache (fsdp/gpt2.h): the forward of gpt2.c for n new
 * tokens only, their keys and values kept for the steps after. */
#include "fsdp/gpt2.h"

/* The step's activations, (n, C) or (n, 4C), and the layer norms' statistics (n, fp32). */
struct step {
  struct decoder *d;
  struct kv_cache *cache;
  int n;
  void *x, *ln, *mean, *rstd, *q, *atty, *proj, *fch, *fch_gelu;
};

static struct tensor rows(const struct step *s, void *data, size_t cols) {
  return decoder_rows(s->d, data, s->n, cols);
}
static struct tensor stats(const struct step *s, void *data) { return tensor_1d(data, DTYPE_F32, (size_t)s->n); }

/* x -> x + proj(attention(q, cache k, cache v)), q k v = ln1(x) Wqkv + b (k and v of the new
 *   positions written into the cache) -> (that) + fcproj(gelu(fc(ln2(that)))) */
static void block_decode(struct step *s, int l) {
  struct decoder *d = s->d;
  int u = d->blocks[l];
  struct nn_ctx c = decoder_ctx(d);
  size_t C = (size_t)d->config.n_embd, NH = (size_t)d->config.n_head, hd = C / NH;
  struct tensor w = decoder_param(d, u, BLK_QKV_W), b = decoder_param(d, u, BLK_QKV_B);
  struct tensor x = rows(s, s->x, C), ln = rows(s, s->ln, C);
  nn_layernorm_forward(&c, ln, stats(s, s->mean), stats(s, s->rstd), x, decoder_param(d, u, BLK_LN1_W),
                       decoder_param(d, u, BLK_LN1_B));
  /* Wqkv's rows are [Wq | Wk | Wv]: each projection is its own matmul. */
  nn_matmul_forward(&c, rows(s, s->q, C), ln, decoder_param_rows(w, 0, C), decoder_param_rows(b, 0, C));
  nn_matmul_forward(&c, decoder_cache_new(d, s->cache, s->cache->k[l], s->n), ln, decoder_param_rows(w, C, C),
                    decoder_param_rows(b, C, C));
  nn_matmul_forward(&c, decoder_cache_new(d, s->cache, s->cache->v[l], s->n), ln, decoder_param_rows(w, 2 * C, C),
                    decoder_param_rows(b, 2 * C, C));
  struct tensor q = {s->q, d->dtype, 3, {(size_t)s->n, NH, hd}};
  nn_cached_attention_forward(&c, rows(s, s->atty, C), q, decoder_cache_all(d, s->cache, s->cache->k[l], s->n),
                              decoder_cache_all(d, s->cache, s->cache->v[l], s->n));
  nn_matmul_forward(&c, rows(s, s->proj, C), rows(s, s->atty, C), decoder_param(d, u, BLK_ATTPROJ_W),
                    decoder_param(d, u, BLK_ATTPROJ_B));
  nn_residual_forward(&c, x, x, rows(s, s->proj, C));
  nn_layernorm_forward(&c, ln, stats(s, s->mean), stats(s, s->rstd), x, decoder_param(d, u, BLK_LN2_W),
                       decoder_param(d, u, BLK_LN2_B));
  nn_matmul_forward(&c, rows(s, s->fch, 4 * C), ln, decoder_param(d, u, BLK_FC_W), decoder_param(d, u, BLK_FC_B));
  nn_gelu_forward(&c, rows(s, s->fch_gelu, 4 * C), rows(s, s->fch, 4 * C));
  nn_matmul_forward(&c, rows(s, s->proj, C), rows(s, s->fch_gelu, 4 * C), decoder_param(d, u, BLK_FCPROJ_W),
                    decoder_param(d, u, BLK_FCPROJ_B));
  nn_residual_forward(&c, x, x, rows(s, s->proj, C));
}

/* x = wte[tokens] + wpe[len .. len + n - 1]; the blocks; logits = lnf(x[n - 1]) @ wte^T. */
void gpt2_decode(struct gpt2 *model, struct kv_cache *cache, const int *tokens, int n, float *logits) {
  struct decoder *d = &model->base;
  size_t C = (size_t)d->config.n_embd, P = (size_t)cache->len;
  struct nn_ctx k = decoder_ctx(d);
  struct step s = {d, cache, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  void **const buffers[] = {&s.x, &s.ln, &s.mean, &s.rstd, &s.q, &s.atty, &s.proj, &s.fch, &s.fch_gelu};
  size_t NC = decoder_bytes(d, (size_t)n * C), stat = decoder_stats_bytes((size_t)n);
  size_t bytes[] = {NC, NC, stat, stat, NC, NC, NC, 4 * NC, 4 * NC};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) *buffers[i] = decoder_alloc_bytes(d, bytes[i]);
  struct tensor ids = decoder_upload_tokens(d, tokens, n);

  fsdp_pre_forward(d->fsdp, d->embedding);
  struct tensor wpe = decoder_param(d, d->embedding, EMB_WPE);
  nn_encoder_forward(&k, rows(&s, s.x, C), ids, decoder_param(d, d->embedding, EMB_WTE),
                     decoder_param_rows(wpe, P, wpe.shape[0] - P));
  fsdp_post_forward(d->fsdp, d->embedding);
  for (int l = 0; l < d->config.n_layer; l++) {
    fsdp_pre_forward(d->fsdp, d->blocks[l]);
    block_decode(&s, l);
    fsdp_post_forward(d->fsdp, d->blocks[l]);
  }
  void *last = (char *)s.x + (size_t)(n - 1) * C * dtype_size(d->dtype);
  fsdp_pre_forward(d->fsdp, d->final_norm);
  nn_layernorm_forward(&k, decoder_rows(d, s.ln, 1, C), tensor_1d(s.mean, DTYPE_F32, 1),
                       tensor_1d(s.rstd, DTYPE_F32, 1), decoder_rows(d, last, 1, C),
                       decoder_param(d, d->final_norm, LNF_W), decoder_param(d, d->final_norm, LNF_B));
  fsdp_post_forward(d->fsdp, d->final_norm);
  fsdp_pre_forward(d->fsdp, d->output);
  decoder_logits_to_host(d, decoder_param(d, d->output, EMB_WTE), s.ln, logits);
  fsdp_post_forward(d->fsdp, d->output);

  decoder_release(d, &ids.data);
  decoder_release_all(d, buffers, sizeof buffers / sizeof buffers[0]);
  decoder_decode_done(d, cache, n);
}
