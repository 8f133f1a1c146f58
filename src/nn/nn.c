/* The one entry point of every op: find the device's backend, pack the arguments, check
 * them against the op's contract (contract.h), launch them on the context's stream. A meta
 * device plans for a real one, so its contracts, scratch sizes and compute dtype are the
 * real backend's, its launches are dropped (stream_launch), and its stream is charged what
 * the op would take there (cost.h, fsdp/meta_clock.h). */
#include "fsdp/nn.h"

#include "contract.h"
#include "cost.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/meta_clock.h"
#include "ops.h"

static const struct nn_backend *backend_for(enum device_kind kind) {
  return kind == DEVICE_CUDA ? nn_cuda_backend() : nn_cpu_backend();
}

static const struct nn_backend *backend_of(const struct device *d) { return backend_for(device_target(d)); }

enum dtype nn_compute_dtype(const struct device *d, enum dtype param_dtype) {
  return backend_of(d)->compute_dtype(param_dtype);
}

/* Set around stream_launch, on the launching thread: nn_launch_stream. */
static _Thread_local struct stream *launching;

struct stream *nn_launch_stream(void) {
  FSDP_CHECK(launching);
  return launching;
}

static void launch(const struct nn_ctx *c, const struct op_contract *contract, nn_kernel kernel, const void *args,
                   size_t bytes) {
  const struct nn_backend *b = backend_of(c->device);
  contract_check(contract, args, c->device, b);
  if (!kernel)
    fsdp_fatal("nn: kernel %s is not implemented on device %s%s", contract->name, b->name,
               device_computes(c->device) ? "" : " (which this meta device plans for)");
  if (!device_computes(c->device))
    stream_spend(c->stream, contract->name, op_seconds(contract, args, meta_clock_speed(c->device)));
  launching = c->stream;
  stream_launch(c->stream, contract->name, kernel, args, bytes);
  launching = NULL;
}

#define LAUNCH(c, op, ...) LAUNCH_AS(c, op, op, __VA_ARGS__)

/* Ops whose argument struct is named after a shorter stem. */
#define LAUNCH_AS(c, op, stem, ...)                                                     \
  do {                                                                                  \
    struct stem##_args args_ = {__VA_ARGS__};                                           \
    launch(c, &nn_contract_##op, backend_of((c)->device)->op, &args_, sizeof args_);    \
  } while (0)

/* Scratch is allocated and freed in stream order around its op: no other op of the stream
 * can be given it before this one is done with it. */
static void *scratch_alloc(const struct nn_ctx *c, size_t bytes) {
  return device_alloc(c->device, bytes, MEM_ACTIVATIONS, c->stream);
}
static void scratch_free(const struct nn_ctx *c, void *scratch) { device_free(c->device, scratch, c->stream); }

/* The column sums of (rows, cols) values that a backward's parameter gradients take. */
static void *column_sums_scratch(const struct nn_ctx *c, size_t rows, size_t cols) {
  return scratch_alloc(c, backend_of(c->device)->column_sums_scratch(rows, cols));
}

void nn_encoder_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor wte,
                        struct tensor wpe) {
  LAUNCH_AS(c, encoder_forward, encoder, out, inp, wte, wpe);
}

void nn_encoder_backward(const struct nn_ctx *c, struct tensor dwte, struct tensor dwpe, struct tensor dout,
                         struct tensor inp) {
  size_t bytes = dwte.data ? backend_of(c->device)->encoder_backward_scratch(tensor_numel(&inp), dwte.shape[0]) : 0;
  void *scratch = scratch_alloc(c, bytes);
  LAUNCH(c, encoder_backward, dwte, dwpe, dout, inp, scratch);
  scratch_free(c, scratch);
}

void nn_layernorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor mean, struct tensor rstd,
                          struct tensor inp, struct tensor weight, struct tensor bias) {
  LAUNCH_AS(c, layernorm_forward, layernorm, out, mean, rstd, inp, weight, bias);
}

void nn_layernorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dbias,
                           struct tensor dout, struct tensor inp, struct tensor weight, struct tensor mean,
                           struct tensor rstd) {
  int params = dweight.data || dbias.data;
  void *scratch = column_sums_scratch(c, params ? tensor_rows(&inp) : 0, 2 * tensor_cols(&inp));
  LAUNCH(c, layernorm_backward, dinp, dweight, dbias, dout, inp, weight, mean, rstd, scratch);
  scratch_free(c, scratch);
}

static void *gemm_workspace(const struct nn_ctx *c) { return scratch_alloc(c, backend_of(c->device)->gemm_workspace); }

void nn_matmul_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor weight,
                       struct tensor bias) {
  void *workspace = gemm_workspace(c);
  LAUNCH_AS(c, matmul_forward, matmul, out, inp, weight, bias, workspace);
  scratch_free(c, workspace);
}

void nn_matmul_backward(const struct nn_ctx *c, struct tensor dinp, enum nn_grad dinp_mode, struct tensor dweight,
                        struct tensor dbias, struct tensor dout, struct tensor inp, struct tensor weight) {
  void *scratch = column_sums_scratch(c, dbias.data ? tensor_rows(&dout) : 0, tensor_cols(&dout));
  void *workspace = gemm_workspace(c);
  LAUNCH(c, matmul_backward, dinp, dweight, dbias, dout, inp, weight, workspace, scratch, dinp_mode);
  scratch_free(c, workspace);
  scratch_free(c, scratch);
}

void nn_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor lse, struct tensor qkv) {
  LAUNCH_AS(c, attention_forward, attention, out, lse, qkv);
}

void nn_attention_backward(const struct nn_ctx *c, struct tensor dqkv, enum nn_grad dqkv_mode, struct tensor dout,
                           struct tensor qkv, struct tensor out, struct tensor lse) {
  LAUNCH(c, attention_backward, dqkv, dout, qkv, out, lse, dqkv_mode);
}

void nn_gelu_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp) {
  LAUNCH_AS(c, gelu_forward, gelu, out, inp);
}

void nn_gelu_backward(const struct nn_ctx *c, struct tensor dinp, enum nn_grad dinp_mode, struct tensor inp,
                      struct tensor dout) {
  LAUNCH(c, gelu_backward, dinp, inp, dout, dinp_mode);
}

void nn_residual_forward(const struct nn_ctx *c, struct tensor out, struct tensor a, struct tensor b) {
  LAUNCH_AS(c, residual_forward, residual, out, a, b);
}

void nn_classifier(const struct nn_ctx *c, struct tensor dlogits, struct tensor losses, struct tensor logits,
                   struct tensor targets, int vocab, float dloss) {
  LAUNCH(c, classifier, dlogits, losses, logits, targets, vocab, dloss);
}

void nn_rmsnorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor rstd, struct tensor inp,
                        struct tensor weight, float eps) {
  LAUNCH_AS(c, rmsnorm_forward, rmsnorm, out, rstd, inp, weight, eps);
}

void nn_rmsnorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dout,
                         struct tensor inp, struct tensor weight, struct tensor rstd) {
  void *scratch = column_sums_scratch(c, dweight.data ? tensor_rows(&inp) : 0, tensor_cols(&inp));
  LAUNCH(c, rmsnorm_backward, dinp, dweight, dout, inp, weight, rstd, scratch);
  scratch_free(c, scratch);
}

void nn_rope_table(const struct nn_ctx *c, struct tensor table, const struct nn_rope *rope) {
  LAUNCH(c, rope_table, table, *rope);
}

void nn_rope_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor table) {
  LAUNCH_AS(c, rope_forward, rope, out, inp, table);
}

void nn_rope_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dout, struct tensor table) {
  LAUNCH(c, rope_backward, dinp, dout, table);
}

void nn_swiglu_forward(const struct nn_ctx *c, struct tensor out, struct tensor gate, struct tensor up) {
  LAUNCH_AS(c, swiglu_forward, swiglu, out, gate, up);
}

void nn_swiglu_backward(const struct nn_ctx *c, struct tensor dgate, struct tensor dup, enum nn_grad mode,
                        struct tensor dout, struct tensor gate, struct tensor up) {
  LAUNCH(c, swiglu_backward, dgate, dup, dout, gate, up, mode);
}

void nn_gqa_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor lse, struct tensor q,
                              struct tensor k, struct tensor v) {
  LAUNCH_AS(c, gqa_attention_forward, gqa_attention, out, lse, q, k, v);
}

void nn_gqa_attention_backward(const struct nn_ctx *c, struct tensor dq, struct tensor dk, struct tensor dv,
                               enum nn_grad mode, struct tensor dout, struct tensor q, struct tensor k,
                               struct tensor v, struct tensor out, struct tensor lse) {
  LAUNCH(c, gqa_attention_backward, dq, dk, dv, dout, q, k, v, out, lse, mode);
}

void nn_cached_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor q, struct tensor k,
                                 struct tensor v) {
  LAUNCH_AS(c, cached_attention_forward, cached_attention, out, q, k, v);
}

void nn_cast(const struct nn_ctx *c, struct tensor dst, struct tensor src) {
  LAUNCH(c, cast, dst, src);
}

void nn_round(const struct nn_ctx *c, struct tensor x, enum dtype dtype) { LAUNCH(c, round, x, dtype); }

void nn_add(const struct nn_ctx *c, struct tensor y, struct tensor x) {
  LAUNCH(c, add, y, x);
}

void nn_sum(const struct nn_ctx *c, struct tensor sum, struct tensor x) {
  void *scratch = scratch_alloc(c, backend_of(c->device)->sum_scratch(tensor_numel(&x)));
  LAUNCH(c, sum, sum, x, scratch);
  scratch_free(c, scratch);
}

void nn_sum_squares(const struct nn_ctx *c, struct tensor sum, struct tensor x) {
  void *scratch = scratch_alloc(c, backend_of(c->device)->sum_scratch(tensor_numel(&x)));
  LAUNCH_AS(c, sum_squares, sum, sum, x, scratch);
  scratch_free(c, scratch);
}

void nn_fill(const struct nn_ctx *c, struct tensor x, float value) { LAUNCH(c, fill, x, value); }

void nn_init_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                    float std) {
  LAUNCH(c, init_normal, x, seed, stream, first, std);
}

void nn_init_trunc_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                          float std, float bound) {
  LAUNCH(c, init_trunc_normal, x, seed, stream, first, std, bound);
}

void nn_grad_clip_scale(const struct nn_ctx *c, struct tensor scale, struct tensor squares, float unscale,
                        float max_norm) {
  LAUNCH(c, grad_clip_scale, scale, squares, unscale, max_norm);
}

void nn_adamw(const struct nn_ctx *c, struct tensor param, struct tensor rounded, struct tensor grad,
              struct tensor grad_scale, struct tensor m, struct tensor v, const struct nn_adamw *h) {
  LAUNCH(c, adamw, param, rounded, grad, grad_scale, m, v, *h);
}
