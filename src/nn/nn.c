/* The one entry point of every op: find the device's backend, pack the arguments, launch
 * them on the context's stream. A meta device plans for a real one, so its scratch sizes
 * and compute dtype are the real backend's, and its launches are dropped (stream_launch). */
#include "fsdp/nn.h"

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "ops.h"

static const struct nn_backend *backend_for(enum device_kind kind) {
  const struct nn_backend *b = kind == DEVICE_CUDA ? nn_cuda_backend() : &NN_CPU;
  if (!b) fsdp_fatal("nn: this fsdp was built without the cuda kernels");
  return b;
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

static void launch(const struct nn_ctx *c, const char *name, nn_kernel kernel, const void *args, size_t bytes) {
  if (!kernel)
    fsdp_fatal("nn: kernel %s is not implemented on device %s%s", name, backend_of(c->device)->name,
               device_computes(c->device) ? "" : " (which this meta device plans for)");
  launching = c->stream;
  stream_launch(c->stream, name, kernel, args, bytes);
  launching = NULL;
}

#define LAUNCH(c, op, ...)                                      \
  do {                                                          \
    struct op##_args args_ = {__VA_ARGS__};                     \
    launch(c, #op, backend_of((c)->device)->op, &args_, sizeof args_); \
  } while (0)

/* Ops whose argument struct is named after a shorter stem. */
#define LAUNCH_AS(c, op, stem, ...)                             \
  do {                                                          \
    struct stem##_args args_ = {__VA_ARGS__};                   \
    launch(c, #op, backend_of((c)->device)->op, &args_, sizeof args_); \
  } while (0)

void nn_encoder_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor wte,
                        struct tensor wpe) {
  LAUNCH_AS(c, encoder_forward, encoder, out, inp, wte, wpe);
}

void nn_encoder_backward(const struct nn_ctx *c, struct tensor dwte, struct tensor dwpe, struct tensor dout,
                         struct tensor inp) {
  LAUNCH(c, encoder_backward, dwte, dwpe, dout, inp);
}

void nn_layernorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor mean, struct tensor rstd,
                          struct tensor inp, struct tensor weight, struct tensor bias) {
  LAUNCH_AS(c, layernorm_forward, layernorm, out, mean, rstd, inp, weight, bias);
}

void nn_layernorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dbias,
                           struct tensor dout, struct tensor inp, struct tensor weight, struct tensor mean,
                           struct tensor rstd) {
  LAUNCH(c, layernorm_backward, dinp, dweight, dbias, dout, inp, weight, mean, rstd);
}

void nn_matmul_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor weight,
                       struct tensor bias) {
  LAUNCH_AS(c, matmul_forward, matmul, out, inp, weight, bias);
}

void nn_matmul_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dbias,
                        struct tensor dout, struct tensor inp, struct tensor weight) {
  LAUNCH(c, matmul_backward, dinp, dweight, dbias, dout, inp, weight);
}

void nn_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor att, struct tensor qkv) {
  LAUNCH_AS(c, attention_forward, attention, out, att, qkv);
}

/* The scratch is allocated and freed in stream order around the op: no other op of the
 * stream can be given it before this one is done with it. */
void nn_attention_backward(const struct nn_ctx *c, struct tensor dqkv, struct tensor dout, struct tensor qkv,
                           struct tensor att) {
  size_t bytes = backend_of(c->device)->attention_backward_scratch(&att);
  void *scratch = device_alloc(c->device, bytes, MEM_ACTIVATIONS, c->stream);
  LAUNCH(c, attention_backward, dqkv, dout, qkv, att, scratch);
  device_free(c->device, scratch, c->stream);
}

void nn_gelu_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp) {
  LAUNCH_AS(c, gelu_forward, gelu, out, inp);
}

void nn_gelu_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor inp, struct tensor dout) {
  LAUNCH(c, gelu_backward, dinp, inp, dout);
}

void nn_residual_forward(const struct nn_ctx *c, struct tensor out, struct tensor a, struct tensor b) {
  LAUNCH_AS(c, residual_forward, residual, out, a, b);
}

void nn_softmax_crossentropy_forward(const struct nn_ctx *c, struct tensor probs, struct tensor losses,
                                     struct tensor logits, struct tensor targets) {
  LAUNCH_AS(c, softmax_crossentropy_forward, crossentropy, probs, losses, logits, targets);
}

void nn_softmax_crossentropy_backward(const struct nn_ctx *c, struct tensor dlogits, struct tensor probs,
                                      struct tensor targets, float dloss) {
  LAUNCH_AS(c, softmax_crossentropy_backward, crossentropy_backward, dlogits, probs, targets, dloss);
}

void nn_rmsnorm_forward(const struct nn_ctx *c, struct tensor out, struct tensor rstd, struct tensor inp,
                        struct tensor weight, float eps) {
  LAUNCH_AS(c, rmsnorm_forward, rmsnorm, out, rstd, inp, weight, eps);
}

void nn_rmsnorm_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dweight, struct tensor dout,
                         struct tensor inp, struct tensor weight, struct tensor rstd) {
  LAUNCH(c, rmsnorm_backward, dinp, dweight, dout, inp, weight, rstd);
}

void nn_rope_table(const struct nn_ctx *c, struct tensor table, const struct nn_rope *rope) {
  FSDP_CHECK(table.ndim == 2 && table.shape[1] % 2 == 0);
  LAUNCH(c, rope_table, table, *rope);
}

/* The kernels take the sizes from x (B, T, H, hd): the table must cover its positions. */
static void check_rope(struct tensor x, struct tensor table) {
  FSDP_CHECK(x.ndim == 4 && table.ndim == 2 && table.shape[1] == x.shape[3] && table.shape[0] >= x.shape[1]);
}

void nn_rope_forward(const struct nn_ctx *c, struct tensor out, struct tensor inp, struct tensor table) {
  check_rope(inp, table);
  FSDP_CHECK(tensor_numel(&out) == tensor_numel(&inp));
  LAUNCH_AS(c, rope_forward, rope, out, inp, table);
}

void nn_rope_backward(const struct nn_ctx *c, struct tensor dinp, struct tensor dout, struct tensor table) {
  check_rope(dout, table);
  FSDP_CHECK(tensor_numel(&dinp) == tensor_numel(&dout) && dinp.data != dout.data);
  LAUNCH(c, rope_backward, dinp, dout, table);
}

void nn_swiglu_forward(const struct nn_ctx *c, struct tensor out, struct tensor gate, struct tensor up) {
  LAUNCH_AS(c, swiglu_forward, swiglu, out, gate, up);
}

void nn_swiglu_backward(const struct nn_ctx *c, struct tensor dgate, struct tensor dup, struct tensor dout,
                        struct tensor gate, struct tensor up) {
  LAUNCH(c, swiglu_backward, dgate, dup, dout, gate, up);
}

/* The kernels take B, T, NH and hd from q and NKV from k: the other tensors must agree. */
static void check_gqa(struct tensor out, struct tensor att, struct tensor q, struct tensor k, struct tensor v) {
  FSDP_CHECK(q.ndim == 4 && k.ndim == 4 && v.ndim == 4 && att.ndim == 4);
  size_t B = q.shape[0], T = q.shape[1], NH = q.shape[2], hd = q.shape[3], NKV = k.shape[2];
  FSDP_CHECK(k.shape[0] == B && k.shape[1] == T && NKV > 0 && NH % NKV == 0 && k.shape[3] == hd);
  for (int i = 0; i < 4; i++) FSDP_CHECK(v.shape[i] == k.shape[i]);
  FSDP_CHECK(att.shape[0] == B && att.shape[1] == NH && att.shape[2] == T && att.shape[3] == T);
  FSDP_CHECK(tensor_numel(&out) == tensor_numel(&q));
}

void nn_gqa_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor att, struct tensor q,
                              struct tensor k, struct tensor v) {
  check_gqa(out, att, q, k, v);
  LAUNCH_AS(c, gqa_attention_forward, gqa_attention, out, att, q, k, v);
}

/* Scratch as for nn_attention_backward. */
void nn_gqa_attention_backward(const struct nn_ctx *c, struct tensor dq, struct tensor dk, struct tensor dv,
                               struct tensor dout, struct tensor q, struct tensor k, struct tensor v,
                               struct tensor att) {
  check_gqa(dout, att, q, k, v);
  FSDP_CHECK(!dq.data || tensor_numel(&dq) == tensor_numel(&q));
  FSDP_CHECK(!dk.data || tensor_numel(&dk) == tensor_numel(&k));
  FSDP_CHECK(!dv.data || tensor_numel(&dv) == tensor_numel(&v));
  size_t bytes = backend_of(c->device)->attention_backward_scratch(&att);
  void *scratch = device_alloc(c->device, bytes, MEM_ACTIVATIONS, c->stream);
  LAUNCH(c, gqa_attention_backward, dq, dk, dv, dout, q, k, v, att, scratch);
  device_free(c->device, scratch, c->stream);
}

/* The kernel takes n, NH and hd from q and L and NKV from k. */
void nn_cached_attention_forward(const struct nn_ctx *c, struct tensor out, struct tensor q, struct tensor k,
                                 struct tensor v) {
  FSDP_CHECK(q.ndim == 3 && k.ndim == 3 && v.ndim == 3);
  size_t n = q.shape[0], NH = q.shape[1], hd = q.shape[2], L = k.shape[0], NKV = k.shape[1];
  FSDP_CHECK(n >= 1 && n <= L && NKV > 0 && NH % NKV == 0 && k.shape[2] == hd);
  for (int i = 0; i < 3; i++) FSDP_CHECK(v.shape[i] == k.shape[i]);
  FSDP_CHECK(tensor_numel(&out) == tensor_numel(&q));
  LAUNCH_AS(c, cached_attention_forward, cached_attention, out, q, k, v);
}

void nn_cast(const struct nn_ctx *c, struct tensor dst, struct tensor src) {
  FSDP_CHECK(tensor_numel(&dst) == tensor_numel(&src));
  LAUNCH(c, cast, dst, src);
}

void nn_round(const struct nn_ctx *c, struct tensor x, enum dtype dtype) { LAUNCH(c, round, x, dtype); }

void nn_add(const struct nn_ctx *c, struct tensor y, struct tensor x) {
  FSDP_CHECK(tensor_numel(&y) == tensor_numel(&x));
  LAUNCH(c, add, y, x);
}

void nn_scale(const struct nn_ctx *c, struct tensor x, float scale) { LAUNCH(c, scale, x, scale); }

void nn_sum(const struct nn_ctx *c, struct tensor sum, struct tensor x) { LAUNCH(c, sum, sum, x); }

void nn_sum_squares(const struct nn_ctx *c, struct tensor sum, struct tensor x) {
  LAUNCH_AS(c, sum_squares, sum, sum, x);
}

void nn_fill(const struct nn_ctx *c, struct tensor x, float value) { LAUNCH(c, fill, x, value); }

void nn_init_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                    float std) {
  LAUNCH(c, init_normal, x, seed, stream, first, std);
}

void nn_init_trunc_normal(const struct nn_ctx *c, struct tensor x, uint64_t seed, uint64_t stream, uint64_t first,
                          float std, float bound) {
  FSDP_CHECK(std > 0.0f && bound >= std);
  LAUNCH(c, init_trunc_normal, x, seed, stream, first, std, bound);
}

void nn_adamw(const struct nn_ctx *c, struct tensor param, struct tensor grad, struct tensor m, struct tensor v,
              const struct nn_adamw *h) {
  LAUNCH(c, adamw, param, grad, m, v, *h);
}
