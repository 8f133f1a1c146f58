/* The launchers of GPT-2's elementwise and row-wise layer ops (the math is in each .cu
 * file): they take the op's argument struct as the CPU kernels do, its float tensors in
 * the op's compute dtype d (the statistics and losses in fp32, ../contract.c), and
 * enqueue the kernels on the op's stream. matmul.c and attention.c launch the ops built
 * on GEMMs. */
#include "cuda.h"
#include "launch.h"
#include "layers.h"

void cuda_encoder_forward(void *p) {
  const struct encoder_args *a = p;
  int B = (int)a->inp.shape[0], T = (int)a->inp.shape[1], C = (int)a->wte.shape[1];
  layer_check("encoder_forward", gpu_encoder_forward(a->out.dtype, a->out.data, a->inp.data, a->wte.data, a->wpe.data,
                                                     B * T, T, C, layer_stream()));
}

void cuda_encoder_backward(void *p) {
  const struct encoder_backward_args *a = p;
  const char *op = "encoder_backward";
  enum dtype d = a->dout.dtype;
  int B = (int)a->inp.shape[0], T = (int)a->inp.shape[1], C = (int)tensor_cols(&a->dout);
  cudaStream_t s = layer_stream();
  if (a->dwte.data)
    layer_check(op, gpu_encoder_backward_wte(d, a->dwte.data, a->dout.data, a->inp.data, B * T,
                                             (int)a->dwte.shape[0], C, a->scratch, s));
  if (a->dwpe.data) layer_check(op, gpu_encoder_backward_wpe(d, a->dwpe.data, a->dout.data, B, T, C, s));
}

void cuda_layernorm_forward(void *p) {
  const struct layernorm_args *a = p;
  layer_check("layernorm_forward",
              gpu_layernorm_forward(a->out.dtype, a->out.data, a->mean.data, a->rstd.data, a->inp.data, a->weight.data,
                                    a->bias.data, (int)tensor_rows(&a->inp), (int)tensor_cols(&a->inp),
                                    layer_stream()));
}

void cuda_layernorm_backward(void *p) {
  const struct layernorm_backward_args *a = p;
  const char *op = "layernorm_backward";
  enum dtype d = a->dout.dtype;
  int N = (int)tensor_rows(&a->inp), C = (int)tensor_cols(&a->inp);
  cudaStream_t s = layer_stream();
  if (a->dinp.data)
    layer_check(op, gpu_layernorm_backward_input(d, a->dinp.data, a->dout.data, a->inp.data, a->weight.data,
                                                 a->mean.data, a->rstd.data, N, C, s));
  if (a->dweight.data || a->dbias.data)
    layer_check(op, gpu_layernorm_backward_params(d, a->dweight.data, a->dbias.data, a->dout.data, a->inp.data,
                                                  a->mean.data, a->rstd.data, N, C, a->scratch, s));
}

void cuda_gelu_forward(void *p) {
  const struct gelu_args *a = p;
  layer_check("gelu_forward",
              gpu_gelu_forward(a->out.dtype, a->out.data, a->inp.data, tensor_numel(&a->inp), layer_stream()));
}

void cuda_gelu_backward(void *p) {
  const struct gelu_backward_args *a = p;
  layer_check("gelu_backward", gpu_gelu_backward(a->dinp.dtype, a->dinp.data, a->inp.data, a->dout.data,
                                                 tensor_numel(&a->inp), a->dinp_mode == NN_GRAD_ADD, layer_stream()));
}

void cuda_residual_forward(void *p) {
  const struct residual_args *a = p;
  layer_check("residual_forward", gpu_residual_forward(a->out.dtype, a->out.data, a->a.data, a->b.data,
                                                       tensor_numel(&a->out), layer_stream()));
}

void cuda_classifier(void *p) {
  const struct classifier_args *a = p;
  layer_check("classifier", gpu_classifier(a->logits.dtype, a->dlogits.data, a->losses.data, a->logits.data,
                                           a->targets.data, (int)tensor_rows(&a->logits), a->vocab,
                                           (int)tensor_cols(&a->logits), a->dloss, layer_stream()));
}
