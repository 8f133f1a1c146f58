/* The linear layer on cuBLASLt (gemm.c), twin of ../cpu/matmul.c:
 *   forward:  out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias
 *   backward: dinp (N, C) += dout (N, OC) @ weight (or =: NN_GRAD_SET, beta = 0, dinp
 *             not read),  dweight (OC, C) += dout^T @ inp,
 *             dbias (OC) += the column sums of dout
 * The bias is fused into the forward's GEMM as cuBLASLt's BIAS epilogue; where no
 * algorithm takes it, it is broadcast into out first and the GEMM adds its product
 * (beta = 1), as the CPU does. The backward's GEMMs add into the gradients with beta = 1;
 * dbias has a kernel of its own (bias.cu). */
#include "cuda.h"
#include "gemm.h"
#include "launch.h"
#include "layers.h"

void cuda_matmul_forward(void *p) {
  const struct matmul_args *a = p;
  enum dtype d = a->out.dtype;
  int N = (int)tensor_rows(&a->inp), C = (int)tensor_cols(&a->inp), OC = (int)a->weight.shape[0];
  cudaStream_t s = layer_stream();
  struct gemm g = {
      .m = N, .n = OC, .k = C, .batch = 1, .alpha = 1.0f, .beta = 0.0f,
      .a = {a->inp.data, C, 0, 0},
      .b = {a->weight.data, C, 0, 1},
      .c = a->out.data, .ldc = OC,
      .bias = a->bias.data,
      .workspace = a->workspace,
  };
  if (gemm("matmul_forward", d, &g, s)) return;
  layer_check("matmul_forward", gpu_bias_broadcast(d, g.c, g.bias, N, OC, s));
  g.bias = NULL;
  g.beta = 1.0f;
  gemm("matmul_forward", d, &g, s);
}

void cuda_matmul_backward(void *p) {
  const struct matmul_backward_args *a = p;
  const char *op = "matmul_backward";
  enum dtype d = a->dout.dtype;
  int N = (int)tensor_rows(&a->inp), C = (int)tensor_cols(&a->inp), OC = (int)a->weight.shape[0];
  const void *dout = a->dout.data;
  cudaStream_t s = layer_stream();
  if (a->dinp.data) {
    struct gemm g = {
        .m = N, .n = C, .k = OC, .batch = 1, .alpha = 1.0f, .beta = a->dinp_mode == NN_GRAD_ADD ? 1.0f : 0.0f,
        .a = {dout, OC, 0, 0},
        .b = {a->weight.data, C, 0, 0},
        .c = a->dinp.data, .ldc = C,
        .workspace = a->workspace,
    };
    gemm(op, d, &g, s);
  }
  if (a->dweight.data) {
    struct gemm g = {
        .m = OC, .n = C, .k = N, .batch = 1, .alpha = 1.0f, .beta = 1.0f,
        .a = {dout, OC, 0, 1},
        .b = {a->inp.data, C, 0, 0},
        .c = a->dweight.data, .ldc = C,
        .workspace = a->workspace,
    };
    gemm(op, d, &g, s);
  }
  if (a->dbias.data) layer_check(op, gpu_bias_backward(d, a->dbias.data, dout, N, OC, a->scratch, s));
}
