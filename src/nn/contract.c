/* The op contracts (contract.h): one per op of fsdp/nn.h, and their check. */
#include "contract.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "ops.h"

/* ---- the shape rules, in the terms of fsdp/nn.h's comments ---- */

#define RULE(cond)                                  \
  do {                                              \
    if (!check->failed && !(cond)) check->failed = #cond; \
  } while (0)

static int has(struct tensor t) { return t.data != NULL; }
static size_t numel(struct tensor t) { return tensor_numel(&t); }
static size_t rows(struct tensor t) { return tensor_rows(&t); }
static size_t cols(struct tensor t) { return tensor_cols(&t); }
/* Absent, or n elements. */
static int none_or(struct tensor t, size_t n) { return !has(t) || numel(t) == n; }

static void encoder_shapes(const void *p, struct shape_check *check) {
  const struct encoder_args *a = p;
  RULE(a->inp.ndim == 2 && a->wte.ndim == 2);
  size_t BT = numel(a->inp), C = a->wte.shape[1];
  RULE(numel(a->out) == BT * C && cols(a->out) == C);
  RULE(!has(a->wpe) || (a->wpe.ndim == 2 && a->wpe.shape[1] == C && a->wpe.shape[0] >= a->inp.shape[1]));
}

static void encoder_backward_shapes(const void *p, struct shape_check *check) {
  const struct encoder_backward_args *a = p;
  RULE(a->inp.ndim == 2);
  size_t C = cols(a->dout);
  RULE(numel(a->dout) == numel(a->inp) * C);
  RULE(!has(a->dwte) || (a->dwte.ndim == 2 && cols(a->dwte) == C));
  RULE(!has(a->dwpe) || (a->dwpe.ndim == 2 && cols(a->dwpe) == C && a->dwpe.shape[0] >= a->inp.shape[1]));
}

static void layernorm_shapes(const void *p, struct shape_check *check) {
  const struct layernorm_args *a = p;
  size_t N = rows(a->inp), C = cols(a->inp);
  RULE(numel(a->out) == N * C && numel(a->mean) == N && numel(a->rstd) == N);
  RULE(numel(a->weight) == C && numel(a->bias) == C);
}

static void layernorm_backward_shapes(const void *p, struct shape_check *check) {
  const struct layernorm_backward_args *a = p;
  size_t N = rows(a->inp), C = cols(a->inp);
  RULE(numel(a->dout) == N * C && none_or(a->dinp, N * C) && numel(a->mean) == N && numel(a->rstd) == N);
  RULE(numel(a->weight) == C && none_or(a->dweight, C) && none_or(a->dbias, C));
}

/* inp (N, C), weight (OC, C), out (N, OC). */
static void matmul_shapes(const void *p, struct shape_check *check) {
  const struct matmul_args *a = p;
  RULE(a->weight.ndim == 2 && a->weight.shape[1] == cols(a->inp));
  size_t OC = a->weight.shape[0];
  RULE(rows(a->out) == rows(a->inp) && cols(a->out) == OC);
  RULE(none_or(a->bias, OC));
}

static void matmul_backward_shapes(const void *p, struct shape_check *check) {
  const struct matmul_backward_args *a = p;
  RULE(a->weight.ndim == 2 && a->weight.shape[1] == cols(a->inp));
  size_t N = rows(a->inp), C = cols(a->inp), OC = a->weight.shape[0];
  RULE(rows(a->dout) == N && cols(a->dout) == OC);
  RULE(none_or(a->dinp, N * C) && none_or(a->dweight, OC * C) && none_or(a->dbias, OC));
}

/* lse (B, NH, T); qkv (B, T, 3C) and out (B, T, C) with NH heads of C / NH. */
static int packed_attention_agrees(struct tensor lse, struct tensor out, struct tensor qkv) {
  if (lse.ndim != 3) return 0;
  size_t BT = lse.shape[0] * lse.shape[2], C = cols(out);
  return C % lse.shape[1] == 0 && numel(out) == BT * C && numel(qkv) == 3 * BT * C;
}

static void attention_shapes(const void *p, struct shape_check *check) {
  const struct attention_args *a = p;
  RULE(packed_attention_agrees(a->lse, a->out, a->qkv));
}

static void attention_backward_shapes(const void *p, struct shape_check *check) {
  const struct attention_backward_args *a = p;
  RULE(packed_attention_agrees(a->lse, a->dout, a->qkv));
  RULE(numel(a->out) == numel(a->dout));
  RULE(none_or(a->dqkv, numel(a->qkv)));
}

static void gelu_shapes(const void *p, struct shape_check *check) {
  const struct gelu_args *a = p;
  RULE(numel(a->out) == numel(a->inp));
}

static void gelu_backward_shapes(const void *p, struct shape_check *check) {
  const struct gelu_backward_args *a = p;
  RULE(numel(a->dinp) == numel(a->inp) && numel(a->dout) == numel(a->inp));
}

static void residual_shapes(const void *p, struct shape_check *check) {
  const struct residual_args *a = p;
  RULE(numel(a->a) == numel(a->out) && numel(a->b) == numel(a->out));
}

/* logits and dlogits (N, Vp), the vocabulary in the first 1 <= vocab <= Vp columns;
 * losses and targets (N). */
static void classifier_shapes(const void *p, struct shape_check *check) {
  const struct classifier_args *a = p;
  size_t N = rows(a->logits);
  RULE(a->vocab >= 1 && (size_t)a->vocab <= cols(a->logits));
  RULE(!a->dlogits.data || (rows(a->dlogits) == N && cols(a->dlogits) == cols(a->logits)));
  RULE(!a->losses.data || numel(a->losses) == N);
  RULE(numel(a->targets) == N);
}

static void rmsnorm_shapes(const void *p, struct shape_check *check) {
  const struct rmsnorm_args *a = p;
  size_t N = rows(a->inp), C = cols(a->inp);
  RULE(numel(a->out) == N * C && numel(a->rstd) == N && numel(a->weight) == C);
}

static void rmsnorm_backward_shapes(const void *p, struct shape_check *check) {
  const struct rmsnorm_backward_args *a = p;
  size_t N = rows(a->inp), C = cols(a->inp);
  RULE(numel(a->dout) == N * C && none_or(a->dinp, N * C) && numel(a->rstd) == N);
  RULE(numel(a->weight) == C && none_or(a->dweight, C));
}

/* table (maxT, hd): the cosines and the sines of hd / 2 frequencies. */
static void rope_table_shapes(const void *p, struct shape_check *check) {
  const struct rope_table_args *a = p;
  RULE(a->table.ndim == 2 && a->table.shape[1] % 2 == 0);
}

/* x (B, T, H, hd) at positions 0 .. T-1 of the table. */
static int rope_covers(struct tensor x, struct tensor table) {
  return x.ndim == 4 && table.ndim == 2 && table.shape[1] == x.shape[3] && table.shape[0] >= x.shape[1];
}

static void rope_shapes(const void *p, struct shape_check *check) {
  const struct rope_args *a = p;
  RULE(rope_covers(a->inp, a->table));
  RULE(numel(a->out) == numel(a->inp));
}

static void rope_backward_shapes(const void *p, struct shape_check *check) {
  const struct rope_backward_args *a = p;
  RULE(rope_covers(a->dout, a->table));
  RULE(numel(a->dinp) == numel(a->dout));
  RULE(a->dinp.data != a->dout.data);
}

static void swiglu_shapes(const void *p, struct shape_check *check) {
  const struct swiglu_args *a = p;
  RULE(numel(a->gate) == numel(a->out) && numel(a->up) == numel(a->out));
}

static void swiglu_backward_shapes(const void *p, struct shape_check *check) {
  const struct swiglu_backward_args *a = p;
  size_t n = numel(a->gate);
  RULE(numel(a->up) == n && numel(a->dout) == n && numel(a->dgate) == n && numel(a->dup) == n);
}

/* q (B, T, NH, hd), k and v (B, T, NKV, hd) with NKV dividing NH, lse (B, NH, T). */
static int gqa_agrees(struct tensor out, struct tensor lse, struct tensor q, struct tensor k, struct tensor v) {
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4 || lse.ndim != 3) return 0;
  size_t B = q.shape[0], T = q.shape[1], NH = q.shape[2], hd = q.shape[3], NKV = k.shape[2];
  if (k.shape[0] != B || k.shape[1] != T || NKV == 0 || NH % NKV != 0 || k.shape[3] != hd) return 0;
  for (int i = 0; i < 4; i++)
    if (v.shape[i] != k.shape[i]) return 0;
  return lse.shape[0] == B && lse.shape[1] == NH && lse.shape[2] == T && numel(out) == numel(q);
}

static void gqa_attention_shapes(const void *p, struct shape_check *check) {
  const struct gqa_attention_args *a = p;
  RULE(gqa_agrees(a->out, a->lse, a->q, a->k, a->v));
}

static void gqa_attention_backward_shapes(const void *p, struct shape_check *check) {
  const struct gqa_attention_backward_args *a = p;
  RULE(gqa_agrees(a->dout, a->lse, a->q, a->k, a->v));
  RULE(numel(a->out) == numel(a->dout));
  RULE(none_or(a->dq, numel(a->q)) && none_or(a->dk, numel(a->k)) && none_or(a->dv, numel(a->v)));
}

/* q (n, NH, hd), the last n of k's and v's L positions (L, NKV, hd). */
static void cached_attention_shapes(const void *p, struct shape_check *check) {
  const struct cached_attention_args *a = p;
  RULE(a->q.ndim == 3 && a->k.ndim == 3 && a->v.ndim == 3);
  size_t n = a->q.shape[0], NH = a->q.shape[1], hd = a->q.shape[2], L = a->k.shape[0], NKV = a->k.shape[1];
  RULE(n >= 1 && n <= L && NKV > 0 && NH % NKV == 0 && a->k.shape[2] == hd);
  RULE(memcmp(a->v.shape, a->k.shape, sizeof a->k.shape) == 0 && numel(a->out) == numel(a->q));
}

static int is_16bit(enum dtype d) { return d == DTYPE_BF16 || d == DTYPE_F16; }

/* The in-place forms of nn.h, or two buffers apart (the GPU converts every element at once). */
static int cast_overlap_allowed(const struct cast_args *a) {
  size_t n = numel(a->dst);
  const char *dst = a->dst.data, *src = a->src.data;
  if (dst == src) return a->dst.dtype == a->src.dtype || (a->src.dtype == DTYPE_F32 && is_16bit(a->dst.dtype));
  if (is_16bit(a->src.dtype) && a->dst.dtype == DTYPE_F32 && src == dst + 2 * n) return 1;
  return (uintptr_t)dst + tensor_bytes(&a->dst) <= (uintptr_t)src ||
         (uintptr_t)src + tensor_bytes(&a->src) <= (uintptr_t)dst;
}

static void cast_shapes(const void *p, struct shape_check *check) {
  const struct cast_args *a = p;
  RULE(numel(a->dst) == numel(a->src));
  RULE(a->src.dtype == a->dst.dtype || a->src.dtype == DTYPE_F32 || a->dst.dtype == DTYPE_F32);
  RULE(cast_overlap_allowed(a));
}

static void round_shapes(const void *p, struct shape_check *check) {
  const struct round_args *a = p;
  RULE(a->dtype == DTYPE_F32 || is_16bit(a->dtype));
}

static void add_shapes(const void *p, struct shape_check *check) {
  const struct add_args *a = p;
  RULE(numel(a->y) == numel(a->x));
}

static void sum_shapes(const void *p, struct shape_check *check) {
  const struct sum_args *a = p;
  RULE(numel(a->sum) == 1);
}

static void trunc_normal_shapes(const void *p, struct shape_check *check) {
  const struct init_trunc_normal_args *a = p;
  RULE(a->std > 0.0f && a->bound >= a->std);
}

static void grad_clip_scale_shapes(const void *p, struct shape_check *check) {
  const struct grad_clip_scale_args *a = p;
  RULE(numel(a->scale) == 1 && numel(a->squares) == 1);
}

static void adamw_shapes(const void *p, struct shape_check *check) {
  const struct adamw_args *a = p;
  size_t n = numel(a->param);
  RULE(numel(a->grad) == n && none_or(a->grad_scale, 1) && numel(a->m) == n && numel(a->v) == n);
  RULE(none_or(a->rounded, n) && (!has(a->rounded) || a->rounded.dtype != DTYPE_F32));
}

static void no_shapes(const void *p, struct shape_check *check) {
  (void)p;
  (void)check;
}

/* ---- the contracts ---- */

#define IN(args, field, kind) {#field, offsetof(struct args, field), OPERAND_##kind, 0}
#define OPT(args, field, kind) {#field, offsetof(struct args, field), OPERAND_##kind, 1}
#define CONTRACT(op, shape_fn, ...)                                                                         \
  const struct op_contract nn_contract_##op = {                                                            \
      #op, sizeof((struct operand[]){__VA_ARGS__}) / sizeof(struct operand), {__VA_ARGS__}, shape_fn}

CONTRACT(encoder_forward, encoder_shapes, IN(encoder_args, out, COMPUTE), IN(encoder_args, inp, TOKENS),
         IN(encoder_args, wte, COMPUTE), OPT(encoder_args, wpe, COMPUTE));
CONTRACT(encoder_backward, encoder_backward_shapes, OPT(encoder_backward_args, dwte, COMPUTE),
         OPT(encoder_backward_args, dwpe, COMPUTE), IN(encoder_backward_args, dout, COMPUTE),
         IN(encoder_backward_args, inp, TOKENS));
CONTRACT(layernorm_forward, layernorm_shapes, IN(layernorm_args, out, COMPUTE), IN(layernorm_args, mean, F32),
         IN(layernorm_args, rstd, F32), IN(layernorm_args, inp, COMPUTE), IN(layernorm_args, weight, COMPUTE),
         IN(layernorm_args, bias, COMPUTE));
CONTRACT(layernorm_backward, layernorm_backward_shapes, OPT(layernorm_backward_args, dinp, COMPUTE),
         OPT(layernorm_backward_args, dweight, COMPUTE), OPT(layernorm_backward_args, dbias, COMPUTE),
         IN(layernorm_backward_args, dout, COMPUTE), IN(layernorm_backward_args, inp, COMPUTE),
         IN(layernorm_backward_args, weight, COMPUTE), IN(layernorm_backward_args, mean, F32),
         IN(layernorm_backward_args, rstd, F32));
CONTRACT(matmul_forward, matmul_shapes, IN(matmul_args, out, COMPUTE), IN(matmul_args, inp, COMPUTE),
         IN(matmul_args, weight, COMPUTE), OPT(matmul_args, bias, COMPUTE));
CONTRACT(matmul_backward, matmul_backward_shapes, OPT(matmul_backward_args, dinp, COMPUTE),
         OPT(matmul_backward_args, dweight, COMPUTE), OPT(matmul_backward_args, dbias, COMPUTE),
         IN(matmul_backward_args, dout, COMPUTE), IN(matmul_backward_args, inp, COMPUTE),
         IN(matmul_backward_args, weight, COMPUTE));
CONTRACT(attention_forward, attention_shapes, IN(attention_args, out, COMPUTE), IN(attention_args, lse, F32),
         IN(attention_args, qkv, COMPUTE));
CONTRACT(attention_backward, attention_backward_shapes, OPT(attention_backward_args, dqkv, COMPUTE),
         IN(attention_backward_args, dout, COMPUTE), IN(attention_backward_args, qkv, COMPUTE),
         IN(attention_backward_args, out, COMPUTE), IN(attention_backward_args, lse, F32));
CONTRACT(gelu_forward, gelu_shapes, IN(gelu_args, out, COMPUTE), IN(gelu_args, inp, COMPUTE));
CONTRACT(gelu_backward, gelu_backward_shapes, IN(gelu_backward_args, dinp, COMPUTE),
         IN(gelu_backward_args, inp, COMPUTE), IN(gelu_backward_args, dout, COMPUTE));
CONTRACT(residual_forward, residual_shapes, IN(residual_args, out, COMPUTE), IN(residual_args, a, COMPUTE),
         IN(residual_args, b, COMPUTE));
CONTRACT(classifier, classifier_shapes, OPT(classifier_args, dlogits, COMPUTE), OPT(classifier_args, losses, F32),
         IN(classifier_args, logits, COMPUTE), IN(classifier_args, targets, TOKENS));
CONTRACT(rmsnorm_forward, rmsnorm_shapes, IN(rmsnorm_args, out, COMPUTE), IN(rmsnorm_args, rstd, F32),
         IN(rmsnorm_args, inp, COMPUTE), IN(rmsnorm_args, weight, COMPUTE));
CONTRACT(rmsnorm_backward, rmsnorm_backward_shapes, OPT(rmsnorm_backward_args, dinp, COMPUTE),
         OPT(rmsnorm_backward_args, dweight, COMPUTE), IN(rmsnorm_backward_args, dout, COMPUTE),
         IN(rmsnorm_backward_args, inp, COMPUTE), IN(rmsnorm_backward_args, weight, COMPUTE),
         IN(rmsnorm_backward_args, rstd, F32));
CONTRACT(rope_table, rope_table_shapes, IN(rope_table_args, table, COMPUTE));
CONTRACT(rope_forward, rope_shapes, IN(rope_args, out, COMPUTE), IN(rope_args, inp, COMPUTE),
         IN(rope_args, table, COMPUTE));
CONTRACT(rope_backward, rope_backward_shapes, IN(rope_backward_args, dinp, COMPUTE),
         IN(rope_backward_args, dout, COMPUTE), IN(rope_backward_args, table, COMPUTE));
CONTRACT(swiglu_forward, swiglu_shapes, IN(swiglu_args, out, COMPUTE), IN(swiglu_args, gate, COMPUTE),
         IN(swiglu_args, up, COMPUTE));
CONTRACT(swiglu_backward, swiglu_backward_shapes, IN(swiglu_backward_args, dgate, COMPUTE),
         IN(swiglu_backward_args, dup, COMPUTE), IN(swiglu_backward_args, dout, COMPUTE),
         IN(swiglu_backward_args, gate, COMPUTE), IN(swiglu_backward_args, up, COMPUTE));
CONTRACT(gqa_attention_forward, gqa_attention_shapes, IN(gqa_attention_args, out, COMPUTE),
         IN(gqa_attention_args, lse, F32), IN(gqa_attention_args, q, COMPUTE), IN(gqa_attention_args, k, COMPUTE),
         IN(gqa_attention_args, v, COMPUTE));
CONTRACT(gqa_attention_backward, gqa_attention_backward_shapes, OPT(gqa_attention_backward_args, dq, COMPUTE),
         OPT(gqa_attention_backward_args, dk, COMPUTE), OPT(gqa_attention_backward_args, dv, COMPUTE),
         IN(gqa_attention_backward_args, dout, COMPUTE), IN(gqa_attention_backward_args, q, COMPUTE),
         IN(gqa_attention_backward_args, k, COMPUTE), IN(gqa_attention_backward_args, v, COMPUTE),
         IN(gqa_attention_backward_args, out, COMPUTE), IN(gqa_attention_backward_args, lse, F32));
CONTRACT(cached_attention_forward, cached_attention_shapes, IN(cached_attention_args, out, COMPUTE),
         IN(cached_attention_args, q, COMPUTE), IN(cached_attention_args, k, COMPUTE),
         IN(cached_attention_args, v, COMPUTE));
CONTRACT(cast, cast_shapes, IN(cast_args, dst, FLOAT), IN(cast_args, src, FLOAT));
CONTRACT(round, round_shapes, IN(round_args, x, F32));
CONTRACT(add, add_shapes, IN(add_args, y, F32), IN(add_args, x, F32));
CONTRACT(sum, sum_shapes, IN(sum_args, sum, SUM), IN(sum_args, x, F32));
CONTRACT(sum_squares, sum_shapes, IN(sum_args, sum, SUM), IN(sum_args, x, F32));
CONTRACT(fill, no_shapes, IN(fill_args, x, F32));
CONTRACT(init_normal, no_shapes, IN(init_normal_args, x, F32));
CONTRACT(init_trunc_normal, trunc_normal_shapes, IN(init_trunc_normal_args, x, F32));
CONTRACT(grad_clip_scale, grad_clip_scale_shapes, IN(grad_clip_scale_args, scale, F32),
         IN(grad_clip_scale_args, squares, SUM));
CONTRACT(adamw, adamw_shapes, IN(adamw_args, param, F32), OPT(adamw_args, rounded, FLOAT), IN(adamw_args, grad, F32),
         OPT(adamw_args, grad_scale, F32), IN(adamw_args, m, F32), IN(adamw_args, v, F32));

/* ---- the check ---- */

static struct tensor operand_of(const void *args, const struct operand *o) {
  struct tensor t;
  memcpy(&t, (const char *)args + o->offset, sizeof t);
  return t;
}

static int is_float(enum dtype d) { return d == DTYPE_F32 || is_16bit(d); }

/* Appends to text (size bytes, len used so far), cutting what does not fit. */
static void append(char *text, size_t size, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *text, size_t size, size_t *len, const char *fmt, ...) {
  if (*len + 1 >= size) return;
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(text + *len, size - *len, fmt, args);
  va_end(args);
  if (n > 0) *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

/* "out (8, 192) bf16, inp (8, 64) bf16, bias absent": what a shape message shows. */
static void describe(const struct op_contract *c, const void *args, char *text, size_t size) {
  size_t len = 0;
  text[0] = '\0';
  for (int i = 0; i < c->n_operands; i++) {
    struct tensor t = operand_of(args, &c->operands[i]);
    append(text, size, &len, "%s%s ", i ? ", " : "", c->operands[i].name);
    if (!has(t)) {
      append(text, size, &len, "absent");
      continue;
    }
    for (int d = 0; d < t.ndim; d++) append(text, size, &len, "%s%zu", d ? ", " : "(", t.shape[d]);
    append(text, size, &len, ") %s", dtype_name(t.dtype));
  }
}

/* What is wrong with operand t of kind o, given the compute dtype found so far (-1: none
 * yet), or NULL. */
static const char *dtype_problem(const struct operand *o, struct tensor t, int compute, char *text, size_t size) {
  const char *want = NULL;
  switch (o->kind) {
    case OPERAND_COMPUTE:
      if (!is_float(t.dtype)) want = "fp32, bf16 or fp16";
      else if (compute >= 0 && (int)t.dtype != compute) want = dtype_name((enum dtype)compute);
      break;
    case OPERAND_F32: if (t.dtype != DTYPE_F32) want = "fp32 whatever the compute dtype"; break;
    case OPERAND_FLOAT: if (!is_float(t.dtype)) want = "fp32, bf16 or fp16"; break;
    case OPERAND_SUM: if (t.dtype != DTYPE_F64) want = "fp64"; break;
    case OPERAND_TOKENS: if (t.dtype != DTYPE_I32) want = "int32 token ids"; break;
  }
  if (!want) return NULL;
  snprintf(text, size, "operand %s is %s where the op takes %s%s", o->name, dtype_name(t.dtype), want,
           o->kind == OPERAND_COMPUTE && is_float(t.dtype) ? ", the dtype of its other operands" : "");
  return text;
}

/* Where the op was to run, for the messages: "cuda", "the meta device planning for cuda". */
static const char *where(const struct device *d, const struct nn_backend *b, char *text, size_t size) {
  snprintf(text, size, device_computes(d) ? "%s" : "the meta device planning for %s", b->name);
  return text;
}

void contract_check(const struct op_contract *c, const void *args, const struct device *d,
                    const struct nn_backend *b) {
  int compute = -1;
  char problem[256], on[64];
  for (int i = 0; i < c->n_operands; i++) {
    const struct operand *o = &c->operands[i];
    struct tensor t = operand_of(args, o);
    if (!has(t)) {
      if (!o->optional)
        fsdp_fatal("nn: %s on %s: operand %s is required but absent", c->name, where(d, b, on, sizeof on), o->name);
      continue;
    }
    if (dtype_problem(o, t, compute, problem, sizeof problem))
      fsdp_fatal("nn: %s on %s: %s", c->name, where(d, b, on, sizeof on), problem);
    if (o->kind == OPERAND_COMPUTE) compute = (int)t.dtype;
    if ((uintptr_t)t.data % dtype_size(t.dtype) != 0)
      fsdp_fatal("nn: %s on %s: operand %s at %p is not aligned to its %zu-byte elements", c->name,
                 where(d, b, on, sizeof on), o->name, t.data, dtype_size(t.dtype));
  }
  if (compute >= 0 && !(b->computes_in & (1u << compute)))
    fsdp_fatal("nn: %s on %s: its kernels do not compute in %s", c->name, where(d, b, on, sizeof on),
               dtype_name((enum dtype)compute));
  struct shape_check check = {NULL};
  c->shapes(args, &check);
  if (check.failed) {
    char shapes[512];
    describe(c, args, shapes, sizeof shapes);
    fsdp_fatal("nn: %s on %s: the operands break the rule %s: %s", c->name, where(d, b, on, sizeof on), check.failed,
               shapes);
  }
}
