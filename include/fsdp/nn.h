/* The kernel interface: every op is declared once here and implemented once per
 * backend (src/nn/cpu, src/nn/cuda); models and the runtime call only these. An op
 * takes a context (the device and the stream it runs on; its scratch comes from the
 * device's allocator) and typed tensors (fsdp/tensor.h), and is launched in stream
 * order. On the meta device an op allocates and frees its scratch and computes nothing.
 * A cuda op that is not written yet ends the job with the op's name.
 *
 * Layer ops in the style of llm.c: one forward and one backward per layer, N = B * T
 * rows. Every backward ACCUMULATES (+=) into its gradient outputs; the caller zeroes
 * them first. A gradient output may be TENSOR_NONE where it is not needed. Tensors are
 * in the compute dtype (nn_compute_dtype), token ids in int32. */
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

/* The dtype the kernels of d compute in for parameters stored in param_dtype: fp32 on
 * the CPU (from the rounded values), the 16-bit dtype itself on a GPU. */
enum dtype nn_compute_dtype(const struct device *d, enum dtype param_dtype);

/* out (B, T, C) = wte[inp[b, t]] + wpe[t]; inp (B, T) int32. */
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
void nn_matmul_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dbias,
                        struct tensor dout, struct tensor inp, struct tensor weight);

/* Causal multi-head self-attention. qkv (B, T, 3C) holds [q | k | v] per row; head h
 * uses columns h*hs .. (h+1)*hs of each, hs = C / NH, NH = att's second dimension.
 * att (B, NH, T, T) receives softmax(q k^T / sqrt(hs)), 0 where masked;
 * out (B, T, C) = att @ v with the heads side by side. */
void nn_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor att, struct tensor qkv);
void nn_attention_backward(const struct nn_ctx *c, struct tensor dqkv, struct tensor dout, struct tensor qkv,
                           struct tensor att);

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void nn_gelu_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp);
void nn_gelu_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor inp, struct tensor dout);

/* out = a + b; its backward is the identity, which the model applies in place. */
void nn_residual_forward(const struct nn_ctx *c, struct tensor out, struct tensor a, struct tensor b);

/* probs (N, V) = softmax(logits) (probs may be logits); losses[i] = -log probs[i, targets[i]]. */
void nn_softmax_crossentropy_forward(const struct nn_ctx *c, struct tensor probs, struct tensor losses,
                                     struct tensor logits, struct tensor targets);
/* dlogits[i, :] += (probs[i, :] - onehot(targets[i])) * dloss. */
void nn_softmax_crossentropy_backward(const struct nn_ctx *c, struct tensor dlogits, struct tensor probs,
                                      struct tensor targets, float dloss);

/* ---- the runtime's ops, over flat buffers ---- */

/* dst = src converted to dst's dtype (fp32, bf16, fp16), rounding to nearest even.
 * In place: a narrowing with dst.data == src.data, or a widening from the upper half of
 * dst's own bytes (src.data == (char *)dst.data + 2 * numel). */
void nn_cast(const struct nn_ctx *c, struct tensor dst, struct tensor src);
/* x (fp32) = x rounded to dtype and widened back. */
void nn_round(const struct nn_ctx *c, struct tensor x, enum dtype dtype);
/* y += x (fp32). */
void nn_add(const struct nn_ctx *c, struct tensor y, struct tensor x);
/* x *= scale (fp32). */
void nn_scale(const struct nn_ctx *c, struct tensor x, float scale);
/* sum[0] (fp64) += the sum of x (fp32), and of its squares. */
void nn_sum(const struct nn_ctx *c, struct tensor sum, struct tensor x);
void nn_sum_squares(const struct nn_ctx *c, struct tensor sum, struct tensor x);
/* x = value. */
void nn_fill(const struct nn_ctx *c, struct tensor x, float value);
/* x[i] = std * normal(seed, stream, first + i): Philox4x32-10 and Box-Muller (fsdp/rng.h). */
void nn_init_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                    float std);

/* PyTorch's AdamW on fp32 buffers: p -= lr * wd * p; m = b1 m + (1 - b1) g;
 * v = b2 v + (1 - b2) g^2; p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
struct nn_adamw {
  float lr, beta1, beta2, eps, weight_decay;
  float bias_correction1, bias_correction2_sqrt; /* 1 - b1^t, sqrt(1 - b2^t) */
};
void nn_adamw(const struct nn_ctx *c, struct tensor param, struct tensor grad, struct tensor m, struct tensor v,
              const struct nn_adamw *h);

/* The OpenMP threads the CPU kernels run on (OMP_NUM_THREADS, or the cores this process may use). */
int nn_num_threads(void);

#endif
