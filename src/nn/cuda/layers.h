/* Private to src/nn/cuda: the GPU side of GPT-2's layer ops (the .cu files, nvcc), called
 * by the C launchers (layers_gpt2.c, matmul.c, attention.c) with plain pointers into
 * device memory. d is the compute dtype the op's float tensors share (fp32, bf16 or fp16)
 * but layernorm's mean and rstd and the per-token losses, which are fp32; token ids are
 * int32. Sizes are ints, as the CPU kernels take them (the model
 * checks that they fit). Each enqueues its kernels on stream s and returns the launch's
 * error (cudaGetLastError). The math of each is in its .cu file. */
#ifndef FSDP_NN_CUDA_LAYERS_H
#define FSDP_NN_CUDA_LAYERS_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "fsdp/dtype.h"

/* encoder.cu. wpe NULL: no position embedding. The backward has a part per gradient; dwte's
 * (V, C) takes encoder_backward_scratch_bytes(N, V) bytes of scratch (encoder.h). */
cudaError_t gpu_encoder_forward(enum dtype d, void *out, const int *inp, const void *wte, const void *wpe, int N,
                                int T, int C, cudaStream_t s);
cudaError_t gpu_encoder_backward_wte(enum dtype d, void *dwte, const void *dout, const int *inp, int N, int V,
                                     int C, void *scratch, cudaStream_t s);
cudaError_t gpu_encoder_backward_wpe(enum dtype d, void *dwpe, const void *dout, int B, int T, int C,
                                     cudaStream_t s);

/* layernorm.cu. The backward's two parts: dinp, and dweight and dbias (either NULL) through
 * colsum_scratch_bytes(N, 2 * C) bytes of scratch (colsum.h). */
cudaError_t gpu_layernorm_forward(enum dtype d, void *out, void *mean, void *rstd, const void *inp,
                                  const void *weight, const void *bias, int N, int C, cudaStream_t s);
cudaError_t gpu_layernorm_backward_input(enum dtype d, void *dinp, const void *dout, const void *inp,
                                         const void *weight, const void *mean, const void *rstd, int N, int C,
                                         cudaStream_t s);
cudaError_t gpu_layernorm_backward_params(enum dtype d, void *dweight, void *dbias, const void *dout,
                                          const void *inp, const void *mean, const void *rstd, int N, int C,
                                          void *scratch, cudaStream_t s);

/* gelu.cu, residual.cu: elementwise over n elements. */
cudaError_t gpu_gelu_forward(enum dtype d, void *out, const void *inp, size_t n, cudaStream_t s);
/* accumulate: dinp += (1) or = (0). */
cudaError_t gpu_gelu_backward(enum dtype d, void *dinp, const void *inp, const void *dout, size_t n, int accumulate,
                              cudaStream_t s);
cudaError_t gpu_residual_forward(enum dtype d, void *out, const void *a, const void *b, size_t n, cudaStream_t s);

/* classifier.cu: the fused classifier over rows of Vp logits, V of them the vocabulary's.
 * dlogits may be logits; dlogits and losses may be NULL. */
cudaError_t gpu_classifier(enum dtype d, void *dlogits, void *losses, const void *logits, const int *targets, int N,
                           int V, int Vp, float dloss, cudaStream_t s);

/* bias.cu: out (N, OC) = bias in every row (the matmul's bias where cuBLASLt's epilogue
 * cannot take it); dbias (OC) += the column sums of dout (N, OC), through
 * colsum_scratch_bytes(N, OC) bytes of scratch (colsum.h). */
cudaError_t gpu_bias_broadcast(enum dtype d, void *out, const void *bias, int N, int OC, cudaStream_t s);
cudaError_t gpu_bias_backward(enum dtype d, void *dbias, const void *dout, int N, int OC, void *scratch,
                              cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
