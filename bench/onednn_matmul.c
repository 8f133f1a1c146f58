/* GFLOP/s of oneDNN's matmul primitive on the products of a GPT-2 124M step at
 * B=8, T=256 (2048 rows): for each of its weight shapes, the forward
 * out = inp @ W^T, and the backward dinp += dout @ W and dweight += dout^T @ inp
 * (accumulating, as fsdp.c's backward does), in fp32, and in bf16 with fp32
 * accumulation writing fp32 or bf16. Compared across oneDNN builds, it picked the
 * one fsdp.c links (docs/benchmarks.md): it builds against the 2.x C API (Debian
 * 12's libdnnl-dev) and the 3.x one (PyPI's onednn-devel), so it stands outside
 * src/ and calls the library directly.
 *
 * Usage: onednn_matmul [ROWS] [SECONDS PER PRODUCT]  (2048, 0.5); threads: OMP_NUM_THREADS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dnnl.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    dnnl_status_t st_ = (call);                                                            \
    if (st_ != dnnl_success) {                                                             \
      fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__, #call, (int)st_); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* The two C APIs differ in how a memory descriptor is held and a matmul is described. */
#if DNNL_VERSION_MAJOR >= 3
typedef dnnl_memory_desc_t md_t;
#define MD(m) (m)
static md_t matrix_md(dnnl_dim_t rows, dnnl_dim_t cols, dnnl_dim_t row_stride, dnnl_dim_t col_stride,
                      dnnl_data_type_t dt) {
  dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
  md_t md;
  CHECK(dnnl_memory_desc_create_with_strides(&md, 2, dims, dt, strides));
  return md;
}
static void matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t e, md_t a, md_t b, md_t c, dnnl_primitive_attr_t at) {
  CHECK(dnnl_matmul_primitive_desc_create(pd, e, a, b, NULL, c, at));
}
static void append_sum(dnnl_post_ops_t po) { CHECK(dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef)); }
static void free_md(md_t md) { dnnl_memory_desc_destroy(md); }
#else
typedef dnnl_memory_desc_t md_t;
#define MD(m) (&(m))
static md_t matrix_md(dnnl_dim_t rows, dnnl_dim_t cols, dnnl_dim_t row_stride, dnnl_dim_t col_stride,
                      dnnl_data_type_t dt) {
  dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
  md_t md;
  CHECK(dnnl_memory_desc_init_by_strides(&md, 2, dims, dt, strides));
  return md;
}
static void matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t e, md_t a, md_t b, md_t c, dnnl_primitive_attr_t at) {
  dnnl_matmul_desc_t desc;
  CHECK(dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c));
  CHECK(dnnl_primitive_desc_create(pd, &desc, at, e, NULL));
}
static void append_sum(dnnl_post_ops_t po) { CHECK(dnnl_post_ops_append_sum(po, 1.0f)); }
static void free_md(md_t md) { (void)md; }
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* C (M, N) [+]= A (M, K) @ B (K, N); an operand is transposed when its columns are contiguous. */
struct product {
  const char *name;
  dnnl_dim_t M, K, N;
  int a_transposed, b_transposed, accumulate;
};

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static md_t operand_md(dnnl_dim_t rows, dnnl_dim_t cols, int transposed, dnnl_data_type_t dt) {
  return transposed ? matrix_md(rows, cols, 1, rows, dt) : matrix_md(rows, cols, cols, 1, dt);
}

static size_t dt_size(dnnl_data_type_t dt) { return dt == dnnl_f32 ? 4 : 2; }

/* Median and fastest seconds of one execution over runs that last about `seconds` in all. */
static void time_product(const struct product *p, dnnl_data_type_t in_dt, dnnl_data_type_t out_dt, double seconds,
                         char *impl, size_t impl_size, double *median, double *fastest) {
  md_t a = operand_md(p->M, p->K, p->a_transposed, in_dt);
  md_t b = operand_md(p->K, p->N, p->b_transposed, in_dt);
  md_t c = matrix_md(p->M, p->N, p->N, 1, out_dt);
  dnnl_primitive_attr_t attr;
  CHECK(dnnl_primitive_attr_create(&attr));
  if (p->accumulate) {
    dnnl_post_ops_t po;
    CHECK(dnnl_post_ops_create(&po));
    append_sum(po);
    CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    CHECK(dnnl_post_ops_destroy(po));
  }
  dnnl_primitive_desc_t pd;
  matmul_pd(&pd, engine, a, b, c, attr);
  const char *name;
  CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name));
  snprintf(impl, impl_size, "%s", name);
  dnnl_primitive_t prim;
  CHECK(dnnl_primitive_create(&prim, pd));

  size_t na = (size_t)p->M * p->K, nb = (size_t)p->K * p->N, nc = (size_t)p->M * p->N;
  void *pa = calloc(na, dt_size(in_dt)), *pb = calloc(nb, dt_size(in_dt)), *pc = calloc(nc, dt_size(out_dt));
  /* Small values that stay finite in every dtype: 0x3c00 is 1.0 in bf16, 0x3c000000 in fp32's upper half. */
  for (size_t i = 0; i < na; i++) memcpy((char *)pa + i * dt_size(in_dt) + dt_size(in_dt) - 2, &(short){0x3c00}, 2);
  for (size_t i = 0; i < nb; i++) memcpy((char *)pb + i * dt_size(in_dt) + dt_size(in_dt) - 2, &(short){0x3c00}, 2);
  dnnl_memory_t ma, mb, mc;
  CHECK(dnnl_memory_create(&ma, MD(a), engine, pa));
  CHECK(dnnl_memory_create(&mb, MD(b), engine, pb));
  CHECK(dnnl_memory_create(&mc, MD(c), engine, pc));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};

  enum { MAX_RUNS = 200 };
  double t[MAX_RUNS];
  int n = 0;
  for (int warm = 0; warm < 2; warm++) {
    CHECK(dnnl_primitive_execute(prim, stream, 3, args));
    CHECK(dnnl_stream_wait(stream));
  }
  for (double start = now_s(); n < MAX_RUNS && (n < 3 || now_s() - start < seconds); n++) {
    double t0 = now_s();
    CHECK(dnnl_primitive_execute(prim, stream, 3, args));
    CHECK(dnnl_stream_wait(stream));
    t[n] = now_s() - t0;
  }
  qsort(t, n, sizeof t[0], cmp_double);

  CHECK(dnnl_memory_destroy(ma));
  CHECK(dnnl_memory_destroy(mb));
  CHECK(dnnl_memory_destroy(mc));
  free(pa);
  free(pb);
  free(pc);
  CHECK(dnnl_primitive_destroy(prim));
  CHECK(dnnl_primitive_desc_destroy(pd));
  CHECK(dnnl_primitive_attr_destroy(attr));
  free_md(a);
  free_md(b);
  free_md(c);
  *median = t[n / 2], *fastest = t[0];
}

int main(int argc, char **argv) {
  dnnl_dim_t rows = argc > 1 ? atol(argv[1]) : 2048;
  double seconds = argc > 2 ? atof(argv[2]) : 0.5;
  /* GPT-2 124M's weights (in, out) and how many a step uses: per block qkv, attention
   * projection, MLP up and down (12 blocks), then the tied LM head (vocabulary padded to 50304). */
  struct {
    const char *name;
    dnnl_dim_t in, out;
    int count;
  } layers[] = {{"qkv 768->2304", 768, 2304, 12},
                {"attproj 768->768", 768, 768, 12},
                {"fc 768->3072", 768, 3072, 12},
                {"fcproj 3072->768", 3072, 768, 12},
                {"lm_head 768->50304", 768, 50304, 1}};
  struct {
    const char *name;
    dnnl_data_type_t in, out;
  } dtypes[] = {{"f32", dnnl_f32, dnnl_f32}, {"bf16->f32", dnnl_bf16, dnnl_f32}, {"bf16->bf16", dnnl_bf16, dnnl_bf16}};

  const dnnl_version_t *v = dnnl_version();
  printf("oneDNN %d.%d.%d (%s), cpu runtime %u, %ld rows\n", v->major, v->minor, v->patch, v->hash, v->cpu_runtime,
         (long)rows);
  CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

  printf("| dtype | weight | product | M x K x N | GFLOP/s (median) | GFLOP/s (fastest) | implementation |\n"
         "|---|---|---|---|---:|---:|---|\n");
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    double step_flop = 0, step_s = 0, step_fastest = 0;
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
      dnnl_dim_t C = layers[l].in, OC = layers[l].out;
      struct product ps[] = {{"forward", rows, C, OC, 0, 1, 0},
                             {"dinp", rows, OC, C, 0, 0, 1},
                             {"dweight", OC, rows, C, 1, 0, 1}};
      for (size_t k = 0; k < 3; k++) {
        char impl[64];
        double s, fastest;
        time_product(&ps[k], dtypes[d].in, dtypes[d].out, seconds, impl, sizeof impl, &s, &fastest);
        double flop = 2.0 * ps[k].M * ps[k].K * ps[k].N;
        step_flop += flop * layers[l].count;
        step_s += s * layers[l].count;
        step_fastest += fastest * layers[l].count;
        printf("| %s | %s | %s | %ld x %ld x %ld | %.0f | %.0f | %s |\n", dtypes[d].name, layers[l].name, ps[k].name,
               (long)ps[k].M, (long)ps[k].K, (long)ps[k].N, flop / s * 1e-9, flop / fastest * 1e-9, impl);
        fflush(stdout);
      }
    }
    printf("| %s | **a step's products** | all | %.1f GFLOP | **%.0f** | **%.0f** | %.0f ms, fastest %.0f ms |\n",
           dtypes[d].name, step_flop * 1e-9, step_flop / step_s * 1e-9, step_flop / step_fastest * 1e-9, step_s * 1e3,
           step_fastest * 1e3);
  }
  CHECK(dnnl_stream_destroy(stream));
  CHECK(dnnl_engine_destroy(engine));
  return 0;
}
