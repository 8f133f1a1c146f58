/* The launchers of GPT-2's elementwise and row-wise layer ops (the math is in each .cu
 * file): they take the op's argument struct as the CPU kernels do, check that every float
 * tensor is in the op's compute dtype (the first one's), and enqueue the kernels on the
 * op's stream. matmul.c and attention.c launch the ops built on GEMMs. */
#include "cuda.h"
#include "launch.h"
#include "layers.h"

void cuda_encoder_forward(void *p) {
  const struct encoder_args *a = p;
  const char *op = "encoder_forward";
  enum dtype d = layer_dtype(op, a->out);
  int B = (int)a->inp.shape[0], T = (int)a->inp.shape[1], C = (int)a->wte.shape[1];
  layer_check(op, gpu_encoder_forward(d, in_dtype(op, a->out, d), token_ids(a->inp), in_dtype(op, a->wte, d),
                                      in_dtype_or_null(op, a->wpe, d), B * T, T, C, layer_stream()));
}

void cuda_encoder_backward(void *p) {
  const struct encoder_backward_args *a = p;
  const char *op = "encoder_backward";
  enum dtype d = layer_dtype(op, a->dout);
  int B = (int)a->inp.shape[0], T = (int)a->inp.shape[1], C = (int)tensor_cols(&a->dout);
  const void *dout = in_dtype(op, a->dout, d);
  cudaStream_t s = layer_stream();
  if (a->dwte.data)
    layer_check(op, gpu_encoder_backward_wte(d, in_dtype(op, a->dwte, d), dout, token_ids(a->inp), B * T, C, s));
  if (a->dwpe.data) layer_check(op, gpu_encoder_backward_wpe(d, in_dtype(op, a->dwpe, d), dout, B, T, C, s));
}

void cuda_layernorm_forward(void *p) {
  const struct layernorm_args *a = p;
  const char *op = "layernorm_forward";
  enum dtype d = layer_dtype(op, a->out);
  layer_check(op, gpu_layernorm_forward(d, in_dtype(op, a->out, d), in_dtype(op, a->mean, d),
                                        in_dtype(op, a->rstd, d), in_dtype(op, a->inp, d),
                                        in_dtype(op, a->weight, d), in_dtype(op, a->bias, d),
                                        (int)tensor_rows(&a->inp), (int)tensor_cols(&a->inp), layer_stream()));
}

void cuda_layernorm_backward(void *p) {
  const struct layernorm_backward_args *a = p;
  const char *op = "layernorm_backward";
  enum dtype d = layer_dtype(op, a->dout);
  int N = (int)tensor_rows(&a->inp), C = (int)tensor_cols(&a->inp);
  const void *dout = in_dtype(op, a->dout, d), *inp = in_dtype(op, a->inp, d);
  const void *mean = in_dtype(op, a->mean, d), *rstd = in_dtype(op, a->rstd, d);
  cudaStream_t s = layer_stream();
  if (a->dinp.data)
    layer_check(op, gpu_layernorm_backward_input(d, in_dtype(op, a->dinp, d), dout, inp, in_dtype(op, a->weight, d),
                                                 mean, rstd, N, C, s));
  if (a->dweight.data || a->dbias.data)
    layer_check(op, gpu_layernorm_backward_params(d, in_dtype_or_null(op, a->dweight, d),
                                                  in_dtype_or_null(op, a->dbias, d), dout, inp, mean, rstd, N, C, s));
}

void cuda_gelu_forward(void *p) {
  const struct gelu_args *a = p;
  const char *op = "gelu_forward";
  enum dtype d = layer_dtype(op, a->out);
  layer_check(op, gpu_gelu_forward(d, in_dtype(op, a->out, d), in_dtype(op, a->inp, d), tensor_numel(&a->inp),
                                   layer_stream()));
}

void cuda_gelu_backward(void *p) {
  const struct gelu_backward_args *a = p;
  const char *op = "gelu_backward";
  enum dtype d = layer_dtype(op, a->dinp);
  layer_check(op, gpu_gelu_backward(d, in_dtype(op, a->dinp, d), in_dtype(op, a->inp, d), in_dtype(op, a->dout, d),
                                    tensor_numel(&a->inp), layer_stream()));
}

void cuda_residual_forward(void *p) {
  const struct residual_args *a = p;
  const char *op = "residual_forward";
  enum dtype d = layer_dtype(op, a->out);
  layer_check(op, gpu_residual_forward(d, in_dtype(op, a->out, d), in_dtype(op, a->a, d), in_dtype(op, a->b, d),
                                       tensor_numel(&a->out), layer_stream()));
}

void cuda_softmax_crossentropy_forward(void *p) {
  const struct crossentropy_args *a = p;
  const char *op = "softmax_crossentropy_forward";
  enum dtype d = layer_dtype(op, a->logits);
  layer_check(op, gpu_crossentropy_forward(d, in_dtype(op, a->probs, d), in_dtype(op, a->losses, d),
                                           in_dtype(op, a->logits, d), token_ids(a->targets),
                                           (int)tensor_rows(&a->logits), (int)tensor_cols(&a->logits),
                                           layer_stream()));
}

void cuda_softmax_crossentropy_backward(void *p) {
  const struct crossentropy_backward_args *a = p;
  const char *op = "softmax_crossentropy_backward";
  enum dtype d = layer_dtype(op, a->probs);
  layer_check(op, gpu_crossentropy_backward(d, in_dtype(op, a->dlogits, d), in_dtype(op, a->probs, d),
                                            token_ids(a->targets), a->dloss, (int)tensor_rows(&a->probs),
                                            (int)tensor_cols(&a->probs), layer_stream()));
}
