/* The kernel interface: every op is declared once here and implemented once per
 * backend (src/nn/cpu, src/nn/cuda); models and the runtime call only these. An op
 * takes a context (the device and the stream it runs on; its scratch comes from the
 * device's allocator) and typed tensors (fsdp/tensor.h), and is launched in stream
 * order. On the meta device an op allocates and frees its scratch and computes nothing.
 * A cuda op that is not written yet ends the job with the op's name.
 *
 * Layer ops in the style of llm.c: one forward and one backward per layer, N = B * T
 * rows. Every backward ACCUMULATES (+=) into its gradient outputs; the caller zeroes
 * them first, except an input gradient given with an enum nn_grad. A gradient output
 * may be TENSOR_NONE where it is not needed. Tensors are in the compute dtype
 * (nn_compute_dtype), token ids in int32. */
#ifndef FSDP_NN_H
#define FSDP_NN_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/tensor.h"

struct device;
struct stream;

struct nn_ctx {
  struct device *device;
  struct stream *stream;
};

/* How a backward writes an input gradient that comes with a mode: NN_GRAD_ADD adds to
 * what the buffer holds (a gradient summed over several uses of the input); NN_GRAD_SET
 * overwrites it, so that a buffer nothing has written yet needs no zeroing and is never
 * read (4% of a CPU step of shakespeare-char went to zeroing and reading them back). */
enum nn_grad { NN_GRAD_ADD, NN_GRAD_SET };

/* The dtype the kernels of d compute in for parameters stored in param_dtype: the
 * parameters' own, on every device (16-bit values, fp32 sums). */
enum dtype nn_compute_dtype(const struct device *d, enum dtype param_dtype);

/* out (B, T, C) = wte[inp[b, t]] + wpe[t]; inp (B, T) int32. wpe TENSOR_NONE: no
 * position embedding (Llama's, whose positions are RoPE's), out = wte[inp[b, t]]. */
void nn_encoder_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor wte,
                        struct tensor wpe);
void nn_encoder_backward(const struct nn_ctx *c, struct tensor dwte, struct tensor dwpe, struct tensor dout,
                         struct tensor inp);

/* out = (inp - mean) * rstd * weight + bias over the last dimension (eps 1e-5); mean
 * and rstd (N each) are saved for the backward. */
void nn_layernorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor mean, struct tensor rstd,
                          struct tensor inp, struct tensor weight, struct tensor bias);
void nn_layernorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dbias,
                           struct tensor dout, struct tensor inp, struct tensor weight, struct tensor mean,
                           struct tensor rstd);

/* out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC, or TENSOR_NONE). */
void nn_matmul_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor weight,
                       struct tensor bias);
void nn_matmul_backward(const struct nn_ctx *c, struct tensor dinp, enum nn_grad dinp_mode, struct tensor dweight,
                        struct tensor dbias, struct tensor dout, struct tensor inp, struct tensor weight);

/* Causal multi-head self-attention, tiled (FlashAttention-2's algorithm: no (T, T)
 * matrix is ever held). qkv (B, T, 3C) holds [q | k | v] per row; head h uses columns
 * h*hs .. (h+1)*hs of each, hs = C / NH, NH = lse's second dimension.
 * out (B, T, C) = softmax(q k^T / sqrt(hs), causal) @ v with the heads side by side;
 * lse (B, NH, T, fp32) receives each query's log-sum-exp of its scores, from which the
 * backward recomputes the probabilities (it reads out too). */
void nn_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor lse, struct tensor qkv);
void nn_attention_backward(const struct nn_ctx *c, struct tensor dqkv, enum nn_grad dqkv_mode, struct tensor dout,
                           struct tensor qkv, struct tensor out, struct tensor lse);

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void nn_gelu_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp);
void nn_gelu_backward(const struct nn_ctx *c, struct tensor dinp, enum nn_grad dinp_mode, struct tensor inp,
                      struct tensor dout);

/* out = a + b; its backward is the identity, which the model applies in place. */
void nn_residual_forward(const struct nn_ctx *c, struct tensor out, struct tensor a, struct tensor b);

/* The fused classifier, one pass over each row of logits (N, Vp) whose first vocab
 * columns are the vocabulary's and the rest padding (never in the softmax):
 *   losses[i] = -log softmax(logits[i, :vocab])[targets[i]]   (fp32; losses may be TENSOR_NONE)
 *   dlogits[i, :vocab] = (softmax(logits[i, :vocab]) - onehot(targets[i])) * dloss,
 *   dlogits[i, vocab:] = 0                                    (dlogits may be logits, or TENSOR_NONE)
 * dlogits is written, not accumulated: in place it replaces the logits. */
void nn_classifier(const struct nn_ctx *c, struct tensor dlogits, struct tensor losses, struct tensor logits,
                   struct tensor targets, int vocab, float dloss);

/* ---- Llama 3's layers (Hugging Face's LlamaForCausalLM) ---- */

/* out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps) over the last
 * dimension (Llama 3: eps 1e-5); rstd (N) is saved for the backward. */
void nn_rmsnorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor rstd, struct tensor inp,
                        struct tensor weight, float eps);
void nn_rmsnorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dout,
                         struct tensor inp, struct tensor weight, struct tensor rstd);

/* Rotary position embedding's frequencies: f_i = theta^(-2i/hd) for i < hd/2, with
 * Llama 3.1's rope_scaling (transformers' "llama3" rope type) when factor > 0. With
 * the wavelength w = 2 pi / f_i and L = original_max_position_embeddings: f_i stays
 * where w < L / high_freq_factor, becomes f_i / factor where w > L / low_freq_factor,
 * and in between (1 - s) f_i / factor + s f_i, s = (L / w - low_freq_factor) /
 * (high_freq_factor - low_freq_factor). Llama 3.1 and 3.2: theta 500000; factor 8 (3.2:
 * 32), low_freq_factor 1, high_freq_factor 4, L 8192. */
struct nn_rope {
  float theta;
  float factor, low_freq_factor, high_freq_factor; /* factor 0: no scaling */
  int original_max_position_embeddings;
};
/* table (maxT, hd): row t = [cos(t f_0) .. cos(t f_{hd/2-1}) | sin(t f_0) .. sin(t f_{hd/2-1})],
 * rounded where transformers rounds its float32 computation, so that it matches
 * Hugging Face's table at every position, past 8192 too. */
void nn_rope_table(const struct nn_ctx *c, struct tensor table, const struct nn_rope *rope);
/* RoPE in Hugging Face's rotate-half convention on inp (B, T, H, hd), H heads (q and k
 * apart, as their head counts differ): at position t, each pair (x_i, x_{i+hd/2}) turns
 * by t f_i: out_i = x_i cos - x_{i+hd/2} sin, out_{i+hd/2} = x_{i+hd/2} cos + x_i sin,
 * from table's rows 0 .. T-1. out may be inp. The backward turns dout back by -t f_i
 * and accumulates it into dinp, which must not be dout. */
void nn_rope_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor table);
void nn_rope_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dout, struct tensor table);

/* out (N, F) = silu(gate) * up, silu(x) = x / (1 + exp(-x)); gate and up (N, F). */
void nn_swiglu_forward(const struct nn_ctx *c, struct tensor out, struct tensor gate, struct tensor up);
void nn_swiglu_backward(const struct nn_ctx *c, struct tensor dgate, struct tensor dup, enum nn_grad mode,
                        struct tensor dout, struct tensor gate, struct tensor up);

/* Grouped-query causal attention, tiled as nn_attention_forward. q (B, T, NH, hd), k and
 * v (B, T, NKV, hd), NH a multiple of NKV: query head h attends with kv head
 * h / (NH / NKV) (NKV == NH is multi-head attention), k and v never repeated.
 * out (B, T, NH * hd) = softmax(q k^T / sqrt(hd), causal) @ v with the heads side by side;
 * lse (B, NH, T, fp32) as for nn_attention_forward. The backward's mode is dq's, dk's and
 * dv's; dk and dv get the sum over the query heads that share them. */
void nn_gqa_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor lse, struct tensor q,
                              struct tensor k, struct tensor v);
void nn_gqa_attention_backward(const struct nn_ctx *c, struct tensor dq, struct tensor dk, struct tensor dv,
                               enum nn_grad mode, struct tensor dout, struct tensor q, struct tensor k, struct tensor v,
                               struct tensor out, struct tensor lse);

/* Attention of new positions over a KV cache (generation): q (n, NH, hd) holds the
 * queries of the last n of the L positions whose keys and values k and v (L, NKV, hd)
 * hold, NH a multiple of NKV. Query i, at position L - n + i, sees positions 0 .. L - n + i
 * with kv head h / (NH / NKV): out (n, NH * hd) = softmax(q k^T / sqrt(hd)) v, the heads
 * side by side, as nn_gqa_attention_forward computes it for those rows. */
void nn_cached_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor q, struct tensor k,
                                 struct tensor v);

/* ---- the runtime's ops, over flat buffers ---- */

/* dst = src converted to dst's dtype (fp32, bf16, fp16), rounding to nearest even.
 * In place: a narrowing with dst.data == src.data, or a widening from the upper half of
 * dst's own bytes (src.data == (char *)dst.data + 2 * numel). */
void nn_cast(const struct nn_ctx *c, struct tensor dst, struct tensor src);
/* x (fp32) = x rounded to dtype and widened back. */
void nn_round(const struct nn_ctx *c, struct tensor x, enum dtype dtype);
/* y += x (fp32). */
void nn_add(const struct nn_ctx *c, struct tensor y, struct tensor x);
/* sum[0] (fp64) += the sum of x (fp32), and of its squares. */
void nn_sum(const struct nn_ctx *c, struct tensor sum, struct tensor x);
void nn_sum_squares(const struct nn_ctx *c, struct tensor sum, struct tensor x);
/* x = value. */
void nn_fill(const struct nn_ctx *c, struct tensor x, float value);
/* x[i] = std * normal(seed, stream, first + i): Philox4x32-10 and Box-Muller (fsdp/rng.h). */
void nn_init_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                    float std);
/* x[i] = rng_trunc_normal(seed, stream, first + i, std, bound) (fsdp/rng.h): resampled
 * until within [-bound, bound], bound >= std > 0. */
void nn_init_trunc_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                          float std, float bound);

/* What AdamW multiplies the gradients by (nn_adamw's grad_scale), from squares, the sum of
 * their squares as they are (loss-scaled by 1 / unscale): unscale, times
 * max_norm / (norm + 1e-6) where the unscaled norm sqrt(squares) * unscale exceeds
 * max_norm > 0 (torch.nn.utils.clip_grad_norm_'s clipping). On the device that holds
 * them, so that no step waits for the host to read the norm. */
void nn_grad_clip_scale(const struct nn_ctx *c, struct tensor scale, struct tensor squares, float unscale,
                        float max_norm);

/* PyTorch's AdamW on fp32 buffers, of g = grad * grad_scale[0] (TENSOR_NONE: grad):
 * p -= lr * wd * p; m = b1 m + (1 - b1) g;
 * v = b2 v + (1 - b2) g^2; p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * rounded (TENSOR_NONE, or param's length in bf16 or fp16) receives the new p rounded to
 * its dtype, as nn_cast would round it. */
struct nn_adamw {
  float lr, beta1, beta2, eps, weight_decay;
  float bias_correction1, bias_correction2_sqrt; /* 1 - b1^t, sqrt(1 - b2^t) */
};
void nn_adamw(const struct nn_ctx *c, struct tensor param, struct tensor rounded, struct tensor grad,
              struct tensor grad_scale, struct tensor m, struct tensor v, const struct nn_adamw *h);

/* The OpenMP threads the CPU kernels run on (OMP_NUM_THREADS, or the cores this process may use). */
int nn_num_threads(void);

/* The instructions the CPU kernels run on here, for logs and caches: the vector paths'
 * (fsdp/simd.h) and oneDNN's (its DNNL_MAX_CPU_ISA cap applied), "avx2 / oneDNN avx2". */
void nn_cpu_isa(char *out, size_t size);
/* What the CPU runs a step's products in compute dtype d on, for the run's log: the
 * linear layers' (oneDNN in d, or on fp32 copies where it has no such instructions) and
 * the attention's (oneDNN's sgemm, tile_product on a vector path, or oneDNN's matmul on
 * AMX), "products bf16 on oneDNN over fp32 copies, attention's on tile_product avx512". */
void nn_cpu_engines(enum dtype d, char *out, size_t size);

#endif
