/* GPT-2 layer kernels on the CPU, in the style of llm.c: one forward and one
 * backward per layer, row-major float32 tensors, N = B * T rows.
 *
 * Every backward ACCUMULATES (+=) into its gradient outputs; the caller zeroes
 * them first. Any gradient output may be NULL where it is not needed. */
#ifndef FSDP_NN_H
#define FSDP_NN_H

#include <stddef.h>

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] */
void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C);

/* out = (inp - mean) * rstd * weight + bias over the last dimension (eps 1e-5);
 * mean and rstd (N each) are saved for the backward. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C);
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C);

/* out (N, OC) = inp (N, C) @ weight^T + bias, weight (OC, C), bias (OC) or NULL. */
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC);

/* Causal multi-head self-attention. qkv (B, T, 3C) holds [q | k | v] per row;
 * head h uses columns h*hs .. (h+1)*hs of each, hs = C / NH.
 * att (B, NH, T, T) receives softmax(q k^T / sqrt(hs)) with the masked (future) entries 0;
 * out (B, T, C) = att @ v with heads side by side. */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
/* The OpenMP threads the kernels run on (OMP_NUM_THREADS, or the cores this process may use). */
int nn_num_threads(void);
/* The activation bytes attention_backward allocates while it runs: a T x T scratch
 * per thread. */
size_t attention_backward_scratch_bytes(int T);
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T,
                        int C, int NH);

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void gelu_forward(float *out, const float *inp, int N);
void gelu_backward(float *dinp, const float *inp, const float *dout, int N);

/* out = a + b; its backward is the identity, which the model applies in place. */
void residual_forward(float *out, const float *a, const float *b, int N);

/* probs (N, V) = softmax(logits) (probs may alias logits); losses[i] = -log probs[i, targets[i]]. */
void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets, int N,
                                  int V);
/* dlogits[i,:] += (probs[i,:] - onehot(targets[i])) * dloss, dloss being d(total loss)/d(losses[i]). */
void softmax_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                   int V);

#endif
