/* Times the CPU's layer kernels (and the runtime's AdamW and casts) at the shapes of a
 * training step: shakespeare-char (GPT-2, 6 layers, C 384, 6 heads, vocabulary 256) and
 * llama3-debug (C 256, 16 heads of 16, SwiGLU hidden 768, vocabulary 2048), B = 8 and
 * T = 256, in the compute dtype given. Each kernel runs `repeats` times after one warm-up
 * run; a line shows the kernel, the dtype, the median and the fastest time in ms, the rate
 * at the median (GFLOP/s for the attentions, causal, a product of the backward's five each
 * 2 T^2/2 hs a head; GB/s for the rest: the bytes the kernel must read and write at the
 * least), and the shape; the first lines name the instructions and the engines the
 * products run on. The kernels run through nn.h on the cpu device's host stream, with
 * OMP_NUM_THREADS threads, as a training step runs them.
 *
 * usage: cpu_layers [fp32|bf16|fp16] [repeats] [kernel name filter] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/rng.h"
#include "fsdp/timer.h"

static struct nn_ctx cpu;
static enum dtype dt;
static int repeats = 20;
static const char *filter = "";
static uint64_t next_stream;

/* n values in dtype d, uniform in [-scale, scale): a cheap generator (the timings do not
 * depend on the values, only on their being finite), as the tensors are large. */
static void *random_in(enum dtype d, size_t n, float scale) {
  float *x = fsdp_xmalloc(n * sizeof *x);
  uint64_t state = 0x9e3779b97f4a7c15u * ++next_stream;
  for (size_t i = 0; i < n; i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    x[i] = scale * ((float)(state >> 40) * 0x1p-23f - 1.0f);
  }
  if (d == DTYPE_F32) return x;
  void *packed = fsdp_xmalloc(n * dtype_size(d));
  dtype_pack(d, x, packed, n);
  free(x);
  return packed;
}

static void *randoms(size_t n, float scale) { return random_in(dt, n, scale); }

static int *tokens(size_t n, int V) {
  int *t = fsdp_xmalloc(n * sizeof *t);
  uint64_t stream = next_stream++;
  for (size_t i = 0; i < n; i++) t[i] = (int)rng_below(7, stream, i, (uint64_t)V);
  return t;
}

static int compare_ms(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef void (*kernel_run)(void *state);

/* A kernel's work: its GFLOP (the products), or the GB it must move (the rest). */
struct work {
  double gflop, gbytes;
};
static struct work flops(double gflop) { return (struct work){gflop, 0.0}; }
/* Elements of the dtype read or written, and fp32 ones. */
static struct work moves(double elements, double fp32) {
  return (struct work){0.0, (elements * (double)dtype_size(dt) + fp32 * 4.0) / 1e9};
}

static void time_kernel(const char *name, const char *shape, struct work w, kernel_run run, void *state) {
  if (!strstr(name, filter)) return;
  double *ms = fsdp_xmalloc((size_t)repeats * sizeof *ms);
  run(state);
  for (int r = 0; r < repeats; r++) {
    double t0 = time_now_ms();
    run(state);
    ms[r] = time_now_ms() - t0;
  }
  qsort(ms, (size_t)repeats, sizeof *ms, compare_ms);
  double seconds = ms[repeats / 2] / 1e3;
  printf("%-24s %-5s %9.3f %9.3f %8.1f %-7s %s\n", name, dtype_name(dt), ms[repeats / 2], ms[0],
         (w.gflop > 0 ? w.gflop : w.gbytes) / seconds, w.gflop > 0 ? "GFLOP/s" : "GB/s", shape);
  fflush(stdout);
  free(ms);
}

enum { B = 8, T = 256 };

/* One layer's activations and parameters for both models; gradients reuse them (the
 * values do not matter for timing, only that they are finite). */
struct layers {
  int N, C, NH, V, F, LC, LNH;
  int *inp;
  void *wte, *wpe, *x, *y, *dx, *w, *b, *dw, *db, *h4, *dh4, *qkv, *dqkv, *att, *logits, *probs;
  float *mean, *rstd, *losses;
  void *lx, *ly, *ldx, *lw, *ldw, *gate, *up, *dgate, *dup, *q, *k, *v, *dq, *dk, *dv, *latt, *table, *lo;
  float *lrstd;
};

static struct tensor t1(void *p, size_t n) { return tensor_1d(p, dt, n); }
static struct tensor t2(void *p, size_t r, size_t c) { return tensor_2d(p, dt, r, c); }
static struct tensor f1(float *p, size_t n) { return tensor_1d(p, DTYPE_F32, n); }
static struct tensor heads(void *p, int H, int hd) { return tensor_4d(p, dt, B, T, (size_t)H, (size_t)hd); }

static void run_encoder_forward(void *s) {
  struct layers *l = s;
  nn_encoder_forward(&cpu, t2(l->x, l->N, l->C), tensor_2d(l->inp, DTYPE_I32, B, T), t2(l->wte, l->V, l->C),
                     t2(l->wpe, T, l->C));
}
static void run_encoder_backward(void *s) {
  struct layers *l = s;
  nn_encoder_backward(&cpu, t2(l->wte, l->V, l->C), t2(l->wpe, T, l->C), t2(l->dx, l->N, l->C),
                      tensor_2d(l->inp, DTYPE_I32, B, T));
}
static void run_layernorm_forward(void *s) {
  struct layers *l = s;
  nn_layernorm_forward(&cpu, t2(l->y, l->N, l->C), f1(l->mean, l->N), f1(l->rstd, l->N), t2(l->x, l->N, l->C),
                       t1(l->w, l->C), t1(l->b, l->C));
}
static void run_layernorm_backward(void *s) {
  struct layers *l = s;
  nn_layernorm_backward(&cpu, t2(l->dx, l->N, l->C), t1(l->dw, l->C), t1(l->db, l->C), t2(l->y, l->N, l->C),
                        t2(l->x, l->N, l->C), t1(l->w, l->C), f1(l->mean, l->N), f1(l->rstd, l->N));
}
static void run_gelu_forward(void *s) {
  struct layers *l = s;
  nn_gelu_forward(&cpu, t1(l->dh4, (size_t)l->N * 4 * l->C), t1(l->h4, (size_t)l->N * 4 * l->C));
}
static void run_gelu_backward(void *s) {
  struct layers *l = s;
  size_t n = (size_t)l->N * 4 * l->C;
  /* Overwriting its gradient, as GPT-2's backward does. */
  nn_gelu_backward(&cpu, t1(l->dh4, n), NN_GRAD_SET, t1(l->h4, n), t1(l->h4, n));
}
static void run_residual(void *s) {
  struct layers *l = s;
  nn_residual_forward(&cpu, t2(l->y, l->N, l->C), t2(l->x, l->N, l->C), t2(l->dx, l->N, l->C));
}
/* The fused classifier: the losses alone (the loss's forward), then with dlogits (its
 * backward; into probs, so that every run reads the same logits). */
static void run_classifier_losses(void *s) {
  struct layers *l = s;
  nn_classifier(&cpu, TENSOR_NONE, f1(l->losses, l->N), t2(l->logits, l->N, l->V), tensor_1d(l->inp, DTYPE_I32, l->N),
                l->V, 0.0f);
}
static void run_classifier_dlogits(void *s) {
  struct layers *l = s;
  nn_classifier(&cpu, t2(l->probs, l->N, l->V), TENSOR_NONE, t2(l->logits, l->N, l->V),
                tensor_1d(l->inp, DTYPE_I32, l->N), l->V, 1.0f / l->N);
}
/* Attention's log-sum-exp (B, NH, T), fp32 in every dtype. */
static struct tensor lse(void *data, int NH) {
  return (struct tensor){data, DTYPE_F32, 3, {(size_t)B, (size_t)NH, (size_t)T}};
}
static void run_attention_forward(void *s) {
  struct layers *l = s;
  nn_attention_forward(&cpu, t2(l->y, l->N, l->C), lse(l->att, l->NH), t2(l->qkv, l->N, 3 * l->C));
}
static void run_attention_backward(void *s) {
  struct layers *l = s;
  nn_attention_backward(&cpu, t2(l->dqkv, l->N, 3 * l->C), NN_GRAD_SET, t2(l->dx, l->N, l->C),
                        t2(l->qkv, l->N, 3 * l->C), t2(l->y, l->N, l->C), lse(l->att, l->NH));
}
static void run_rmsnorm_forward(void *s) {
  struct layers *l = s;
  nn_rmsnorm_forward(&cpu, t2(l->ly, l->N, l->LC), f1(l->lrstd, l->N), t2(l->lx, l->N, l->LC), t1(l->lw, l->LC),
                     1e-5f);
}
static void run_rmsnorm_backward(void *s) {
  struct layers *l = s;
  nn_rmsnorm_backward(&cpu, t2(l->ldx, l->N, l->LC), t1(l->ldw, l->LC), t2(l->ly, l->N, l->LC),
                      t2(l->lx, l->N, l->LC), t1(l->lw, l->LC), f1(l->lrstd, l->N));
}
static void run_rope_forward(void *s) {
  struct layers *l = s;
  int hd = l->LC / l->LNH;
  nn_rope_forward(&cpu, heads(l->q, l->LNH, hd), heads(l->q, l->LNH, hd), t2(l->table, T, hd));
}
static void run_rope_backward(void *s) {
  struct layers *l = s;
  int hd = l->LC / l->LNH;
  nn_rope_backward(&cpu, heads(l->dq, l->LNH, hd), heads(l->q, l->LNH, hd), t2(l->table, T, hd));
}
static void run_swiglu_forward(void *s) {
  struct layers *l = s;
  nn_swiglu_forward(&cpu, t2(l->lo, l->N, l->F), t2(l->gate, l->N, l->F), t2(l->up, l->N, l->F));
}
static void run_swiglu_backward(void *s) {
  struct layers *l = s;
  nn_swiglu_backward(&cpu, t2(l->dgate, l->N, l->F), t2(l->dup, l->N, l->F), NN_GRAD_SET, t2(l->up, l->N, l->F),
                     t2(l->gate, l->N, l->F), t2(l->up, l->N, l->F));
}
static void run_gqa_forward(void *s) {
  struct layers *l = s;
  int hd = l->LC / l->LNH;
  nn_gqa_attention_forward(&cpu, t2(l->ly, l->N, l->LC), lse(l->latt, l->LNH),
                           heads(l->q, l->LNH, hd), heads(l->k, l->LNH, hd), heads(l->v, l->LNH, hd));
}
static void run_gqa_backward(void *s) {
  struct layers *l = s;
  int hd = l->LC / l->LNH;
  nn_gqa_attention_backward(&cpu, t1(l->dq, (size_t)l->N * l->LC), t1(l->dk, (size_t)l->N * l->LC),
                            t1(l->dv, (size_t)l->N * l->LC), NN_GRAD_SET, t2(l->ldx, l->N, l->LC),
                            heads(l->q, l->LNH, hd), heads(l->k, l->LNH, hd), heads(l->v, l->LNH, hd),
                            t2(l->ly, l->N, l->LC), lse(l->latt, l->LNH));
}

/* The runtime's update over a shakespeare-char model's 10.7M parameters (fp32 whatever
 * the compute dtype), and the casts of a unshard (fp32 to the dtype and back). */
struct runtime_state {
  size_t n;
  float *param, *grad, *m, *v;
  void *half;
};

static void run_adamw(void *s) {
  struct runtime_state *r = s;
  struct nn_adamw h = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                       .bias_correction1 = 0.5f, .bias_correction2_sqrt = 0.7f};
  /* In 16 bits, with the rounded copy a shard group of one rank keeps. */
  struct tensor rounded = dt == DTYPE_F32 ? TENSOR_NONE : tensor_1d(r->half, dt, r->n);
  nn_adamw(&cpu, f1(r->param, r->n), rounded, f1(r->grad, r->n), TENSOR_NONE, f1(r->m, r->n), f1(r->v, r->n), &h);
}
static void run_cast_narrow(void *s) {
  struct runtime_state *r = s;
  nn_cast(&cpu, tensor_1d(r->half, dt, r->n), f1(r->grad, r->n));
}
static void run_cast_widen(void *s) {
  struct runtime_state *r = s;
  nn_cast(&cpu, f1(r->m, r->n), tensor_1d(r->half, dt, r->n));
}

int main(int argc, char **argv) {
  int d = argc > 1 ? dtype_parse(argv[1]) : DTYPE_F32;
  if (d < 0) {
    fprintf(stderr, "usage: %s [fp32|bf16|fp16] [repeats] [filter]\n", argv[0]);
    return 2;
  }
  dt = (enum dtype)d;
  if (argc > 2) repeats = atoi(argv[2]) > 0 ? atoi(argv[2]) : repeats;
  if (argc > 3) filter = argv[3];
  cpu = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "bench")};

  struct layers l = {.N = B * T, .C = 384, .NH = 6, .V = 256, .F = 768, .LC = 256, .LNH = 16};
  size_t NC = (size_t)l.N * l.C, NL = (size_t)l.N * l.LC, NF = (size_t)l.N * l.F;
  l.inp = tokens((size_t)l.N, l.V);
  l.wte = randoms((size_t)l.V * l.C, 0.02f), l.wpe = randoms((size_t)T * l.C, 0.02f);
  l.x = randoms(NC, 1.0f), l.y = randoms(NC, 1.0f), l.dx = randoms(NC, 1e-3f);
  l.w = randoms((size_t)l.C, 1.0f), l.b = randoms((size_t)l.C, 0.1f);
  l.dw = randoms((size_t)l.C, 1e-3f), l.db = randoms((size_t)l.C, 1e-3f);
  l.h4 = randoms(4 * NC, 1.0f), l.dh4 = randoms(4 * NC, 1e-3f);
  l.qkv = randoms(3 * NC, 1.0f), l.dqkv = randoms(3 * NC, 1e-3f);
  l.att = random_in(DTYPE_F32, (size_t)B * l.NH * T, 0.0f);
  l.logits = randoms((size_t)l.N * l.V, 2.0f), l.probs = randoms((size_t)l.N * l.V, 0.0f);
  l.mean = random_in(DTYPE_F32, (size_t)l.N, 0.0f), l.rstd = random_in(DTYPE_F32, (size_t)l.N, 0.0f);
  l.losses = random_in(DTYPE_F32, (size_t)l.N, 0.0f), l.lrstd = random_in(DTYPE_F32, (size_t)l.N, 0.0f);
  l.lx = randoms(NL, 1.0f), l.ly = randoms(NL, 1.0f), l.ldx = randoms(NL, 1e-3f);
  l.lw = randoms((size_t)l.LC, 1.0f), l.ldw = randoms((size_t)l.LC, 1e-3f);
  l.gate = randoms(NF, 1.0f), l.up = randoms(NF, 1.0f), l.lo = randoms(NF, 1.0f);
  l.dgate = randoms(NF, 1e-3f), l.dup = randoms(NF, 1e-3f);
  l.q = randoms(NL, 1.0f), l.k = randoms(NL, 1.0f), l.v = randoms(NL, 1.0f);
  l.dq = randoms(NL, 1e-3f), l.dk = randoms(NL, 1e-3f), l.dv = randoms(NL, 1e-3f);
  l.latt = random_in(DTYPE_F32, (size_t)B * l.LNH * T, 0.0f);
  l.table = randoms((size_t)T * (l.LC / l.LNH), 0.0f);
  struct nn_rope rope = {.theta = 500000.0f};
  nn_rope_table(&cpu, t2(l.table, T, (size_t)(l.LC / l.LNH)), &rope);

  char isa[64], engines[160];
  nn_cpu_isa(isa, sizeof isa);
  nn_cpu_engines(dt, engines, sizeof engines);
  printf("# %s, %d OpenMP threads; %s\n", isa, nn_num_threads(), engines);
  printf("# B %d, T %d; gpt2 C %d, %d heads, V %d; llama C %d, %d heads, hidden %d\n", B, T, l.C, l.NH, l.V, l.LC,
         l.LNH, l.F);
  double N = l.N, C = l.C, LC = l.LC, F = l.F, V = l.V;
  /* A causal attention product: 2 T^2/2 hs a head. */
  double gpt2_product = 2.0 * B * l.NH * T * (T / 2.0) * (C / l.NH) / 1e9;
  double llama_product = 2.0 * B * l.LNH * T * (T / 2.0) * (LC / l.LNH) / 1e9;
  time_kernel("encoder_forward", "(2048, 384)", moves(3 * N * C, 0), run_encoder_forward, &l);
  time_kernel("encoder_backward", "(2048, 384)", moves(3 * N * C, 0), run_encoder_backward, &l);
  time_kernel("layernorm_forward", "(2048, 384)", moves(2 * N * C, 2 * N), run_layernorm_forward, &l);
  time_kernel("layernorm_backward", "(2048, 384)", moves(4 * N * C, 2 * N), run_layernorm_backward, &l);
  time_kernel("gelu_forward", "(2048, 1536)", moves(2 * N * 4 * C, 0), run_gelu_forward, &l);
  time_kernel("gelu_backward", "(2048, 1536)", moves(3 * N * 4 * C, 0), run_gelu_backward, &l);
  time_kernel("residual_forward", "(2048, 384)", moves(3 * N * C, 0), run_residual, &l);
  time_kernel("classifier losses", "(2048, 256)", moves(N * V, N), run_classifier_losses, &l);
  time_kernel("classifier dlogits", "(2048, 256)", moves(2 * N * V, N), run_classifier_dlogits, &l);
  time_kernel("attention_forward", "B8 NH6 T256 hs64", flops(2 * gpt2_product), run_attention_forward, &l);
  time_kernel("attention_backward", "B8 NH6 T256 hs64", flops(5 * gpt2_product), run_attention_backward, &l);
  time_kernel("rmsnorm_forward", "(2048, 256)", moves(2 * N * LC, N), run_rmsnorm_forward, &l);
  time_kernel("rmsnorm_backward", "(2048, 256)", moves(4 * N * LC, N), run_rmsnorm_backward, &l);
  time_kernel("rope_forward", "B8 T256 H16 hd16", moves(2 * N * LC, 0), run_rope_forward, &l);
  time_kernel("rope_backward", "B8 T256 H16 hd16", moves(2 * N * LC, 0), run_rope_backward, &l);
  time_kernel("swiglu_forward", "(2048, 768)", moves(3 * N * F, 0), run_swiglu_forward, &l);
  time_kernel("swiglu_backward", "(2048, 768)", moves(5 * N * F, 0), run_swiglu_backward, &l);
  time_kernel("gqa_attention_forward", "B8 NH16 T256 hd16", flops(2 * llama_product), run_gqa_forward, &l);
  time_kernel("gqa_attention_backward", "B8 NH16 T256 hd16", flops(5 * llama_product), run_gqa_backward, &l);

  struct runtime_state r = {.n = 10745088};
  r.param = random_in(DTYPE_F32, r.n, 0.02f), r.grad = random_in(DTYPE_F32, r.n, 1e-3f);
  r.m = random_in(DTYPE_F32, r.n, 1e-4f), r.v = random_in(DTYPE_F32, r.n, 0.0f);
  double n = (double)r.n;
  /* Reads parameter, gradient and moments, writes them back but the gradient (and a
   * 16-bit copy). */
  time_kernel("adamw", "10.7M fp32", moves(dt == DTYPE_F32 ? 0 : n, 7 * n), run_adamw, &r);
  if (dt != DTYPE_F32) {
    r.half = randoms(r.n, 1.0f);
    time_kernel("cast_to_dtype", "10.7M fp32 -> dtype", moves(n, n), run_cast_narrow, &r);
    time_kernel("cast_to_fp32", "10.7M dtype -> fp32", moves(n, n), run_cast_widen, &r);
  }
  return 0;
}
