#include "onednn.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

/* The C API of oneDNN 2.x (Debian 12's libdnnl-dev 2.6), built on OpenMP: the products
 * then run on the OpenMP pool of the calling thread, beside our other kernels, where a
 * TBB, threadpool or SYCL build would bring a second pool to fight it for the cores. */
#if DNNL_VERSION_MAJOR != 2
#error "fsdp needs oneDNN 2.x (the C API of dnnl_matmul_desc_init)"
#endif
#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error "fsdp needs a oneDNN built with OpenMP (DNNL_CPU_RUNTIME=OMP)"
#endif

enum { A, B, BIAS, C, OPERANDS };

/* An operand's elements as runs of contiguous ones: count runs of len, each stride
 * elements after the one before. */
struct runs {
  size_t count, len, stride;
};

/* A primitive with the memory objects it runs on: they hold a problem's layouts, and
 * each call only points them at its data. A 16-bit problem that oneDNN cannot run on
 * this CPU (Debian's oneDNN 2.6 has bf16 products only from AVX-512 on, fp16 ones only
 * with AVX512-FP16), or runs only by emulation (bf16 on AVX-512 without its BF16
 * instructions: Skylake to Ice Lake servers, 3.3 times slower than fp32 on an Ice Lake-like
 * Xeon, docs/benchmarks.md), runs as its fp32 twin on widened copies, compact (a head's
 * rows of a wide activation are copied, not the gaps between them): widening is exact, so
 * the product still accumulates in fp32 and c is rounded once, as the 16-bit kernel would
 * do it. */
struct cached_matmul {
  struct onednn_matmul key;
  dnnl_primitive_t primitive;
  dnnl_memory_t mem[OPERANDS]; /* mem[BIAS] NULL without a bias */
  dnnl_memory_t scratchpad;    /* NULL: the primitive needs none */
  int widened[OPERANDS];       /* 16-bit operands, passed to the primitive as compact fp32 copies */
  struct runs runs[OPERANDS];  /* of a widened operand */
};

/* A buffer that only grows, so that a steady step allocates nothing. */
struct buffer {
  void *data;
  size_t bytes;
};

/* The primitives seen so far by one runner of products, and the buffers they share: one
 * scratchpad (user mode, so that oneDNN keeps no buffer per thread) and the fp32 copies
 * of widened operands. One for onednn_matmul, whose products run one at a time under
 * lib.mutex (only a stream's thread calls it, and two would fight for the cores anyway),
 * and one per thread for onednn_matmul_alone. */
struct cache {
  struct cached_matmul *entries;
  size_t count, capacity;
  dnnl_stream_t stream;
  struct buffer scratchpad, wide[OPERANDS];
};

/* One engine for the process. A thread's own cache goes when the thread ends. */
static struct {
  pthread_mutex_t mutex;
  pthread_once_t once;
  pthread_key_t owner;
  dnnl_engine_t engine;
  struct cache team;
  _Atomic uint64_t created;
} lib = {.mutex = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};
static _Thread_local struct cache *own;

static void check(dnnl_status_t status, const char *call) {
  if (status != dnnl_success) fsdp_fatal("oneDNN: %s failed: %s", call, dnnl_status2str(status));
}
#define DNNL(call) check((call), #call)

static void *reserve(struct buffer *b, size_t bytes) {
  if (bytes > b->bytes) {
    free(b->data);
    if (posix_memalign(&b->data, 64, bytes) != 0) fsdp_fatal("oneDNN matmul: out of memory for %zu bytes", bytes);
    b->bytes = bytes;
  }
  return b->data;
}

static void cache_free(void *p) {
  struct cache *c = p;
  for (size_t i = 0; i < c->count; i++) {
    struct cached_matmul *e = &c->entries[i];
    DNNL(dnnl_primitive_destroy(e->primitive));
    for (int j = 0; j < OPERANDS; j++)
      if (e->mem[j]) DNNL(dnnl_memory_destroy(e->mem[j]));
    if (e->scratchpad) DNNL(dnnl_memory_destroy(e->scratchpad));
  }
  if (c->stream) DNNL(dnnl_stream_destroy(c->stream));
  free(c->entries);
  free(c->scratchpad.data);
  for (int j = 0; j < OPERANDS; j++) free(c->wide[j].data);
  free(c);
}

static void start(void) {
  DNNL(dnnl_engine_create(&lib.engine, dnnl_cpu, 0));
  if (pthread_key_create(&lib.owner, cache_free) != 0)
    fsdp_fatal("oneDNN matmul: cannot create the threads' cache key");
}

struct onednn_operand onednn_matrix_rows(int64_t rows, int64_t cols, int64_t ld) {
  return (struct onednn_operand){{rows, cols}, {ld, 1}};
}

struct onednn_operand onednn_transposed_rows(int64_t rows, int64_t cols, int64_t ld) {
  return (struct onednn_operand){{cols, rows}, {1, ld}};
}

struct onednn_operand onednn_matrix(int64_t rows, int64_t cols) { return onednn_matrix_rows(rows, cols, cols); }

struct onednn_operand onednn_transposed(int64_t rows, int64_t cols) { return onednn_transposed_rows(rows, cols, cols); }

static dnnl_data_type_t data_type(int64_t d) {
  switch (d) {
  case DTYPE_F32: return dnnl_f32;
  case DTYPE_BF16: return dnnl_bf16;
  case DTYPE_F16: return dnnl_f16;
  default: fsdp_fatal("oneDNN matmul: no %s operands", dtype_name((enum dtype)d));
  }
}

/* The dtype of each operand. */
static void operand_dtypes(const struct onednn_matmul *m, int64_t d[OPERANDS]) {
  d[A] = d[B] = m->dtype;
  d[BIAS] = d[C] = m->c_fp32 ? DTYPE_F32 : m->dtype;
}

/* The bias as the primitive takes it: a (1, N) row. */
static struct onednn_operand bias_row(const struct onednn_matmul *m) {
  return onednn_matrix(1, m->c.dims[1]);
}

/* A row-major operand's rows, or a transposed one's columns. */
static struct runs runs_of(const struct onednn_operand *o) {
  int by_rows = o->strides[1] == 1;
  if (!by_rows && o->strides[0] != 1) fsdp_fatal("oneDNN matmul: an operand with neither stride 1");
  return by_rows ? (struct runs){(size_t)o->dims[0], (size_t)o->dims[1], (size_t)o->strides[0]}
                 : (struct runs){(size_t)o->dims[1], (size_t)o->dims[0], (size_t)o->strides[1]};
}

/* The same matrix, its runs side by side. */
static struct onednn_operand compact(const struct onednn_operand *o) {
  struct onednn_operand c = *o;
  if (o->strides[1] == 1)
    c.strides[0] = o->dims[1];
  else
    c.strides[1] = o->dims[0];
  return c;
}

static dnnl_primitive_attr_t attributes(const struct onednn_matmul *m) {
  dnnl_primitive_attr_t attr;
  DNNL(dnnl_primitive_attr_create(&attr));
  DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (m->accumulate) {
    dnnl_post_ops_t post_ops;
    DNNL(dnnl_post_ops_create(&post_ops));
    DNNL(dnnl_post_ops_append_sum(post_ops, 1.0f));
    DNNL(dnnl_primitive_attr_set_post_ops(attr, post_ops));
    DNNL(dnnl_post_ops_destroy(post_ops));
  }
  return attr;
}

/* The primitive's descriptor for m with its operands in these layouts and dtypes. */
static dnnl_status_t describe(const struct onednn_matmul *m, const struct onednn_operand layout[OPERANDS],
                              const int64_t dtypes[OPERANDS], dnnl_memory_desc_t md[OPERANDS],
                              dnnl_primitive_desc_t *pd) {
  for (int i = 0; i < OPERANDS; i++) {
    dnnl_dims_t dims = {0}, strides = {0};
    memcpy(dims, layout[i].dims, sizeof layout[i].dims);
    memcpy(strides, layout[i].strides, sizeof layout[i].strides);
    DNNL(dnnl_memory_desc_init_by_strides(&md[i], 2, dims, data_type(dtypes[i]), strides));
  }
  dnnl_matmul_desc_t desc;
  DNNL(dnnl_matmul_desc_init(&desc, &md[A], &md[B], m->bias ? &md[BIAS] : NULL, &md[C]));
  dnnl_primitive_attr_t attr = attributes(m);
  dnnl_status_t status = dnnl_primitive_desc_create(pd, &desc, attr, lib.engine, NULL);
  DNNL(dnnl_primitive_attr_destroy(attr));
  return status;
}

/* Whether the CPU has the instructions of isa as oneDNN may use them (DNNL_MAX_CPU_ISA
 * caps it): the ISAs are sets of feature bits. */
static int has_isa(dnnl_cpu_isa_t isa) { return (dnnl_get_effective_cpu_isa() & isa) == isa; }

static int native_bf16(void) { return has_isa(dnnl_cpu_isa_avx512_core_bf16); }

int onednn_amx(void) { return has_isa(dnnl_cpu_isa_avx512_core_amx); }

static struct cached_matmul create(struct cache *c, const struct onednn_matmul *m) {
  struct cached_matmul e = {.key = *m};
  int64_t dtypes[OPERANDS];
  operand_dtypes(m, dtypes);
  struct onednn_operand layout[OPERANDS] = {m->a, m->b, bias_row(m), m->c};
  dnnl_memory_desc_t md[OPERANDS];
  dnnl_primitive_desc_t pd;
  dnnl_status_t status = m->dtype == DTYPE_BF16 && !native_bf16() ? dnnl_unimplemented
                                                                   : describe(m, layout, dtypes, md, &pd);
  if (status == dnnl_unimplemented && m->dtype != DTYPE_F32) {
    for (int i = 0; i < OPERANDS; i++) {
      e.widened[i] = dtypes[i] != DTYPE_F32;
      if (e.widened[i]) e.runs[i] = runs_of(&layout[i]), layout[i] = compact(&layout[i]);
      dtypes[i] = DTYPE_F32;
    }
    status = describe(m, layout, dtypes, md, &pd);
  }
  if (status != dnnl_success) {
    fsdp_fatal("oneDNN has no %s matmul for (%lld x %lld) @ (%lld x %lld)%s%s%s: %s", dtype_name((enum dtype)m->dtype),
               (long long)m->a.dims[0], (long long)m->a.dims[1], (long long)m->b.dims[0], (long long)m->b.dims[1],
               m->c_fp32 ? " into fp32" : "", m->bias ? ", bias" : "", m->accumulate ? ", accumulating" : "",
               dnnl_status2str(status));
  }
  for (int i = 0; i < OPERANDS; i++)
    if (i != BIAS || m->bias) DNNL(dnnl_memory_create(&e.mem[i], &md[i], lib.engine, DNNL_MEMORY_NONE));
  const dnnl_memory_desc_t *scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  size_t scratch_bytes = scratch ? dnnl_memory_desc_get_size(scratch) : 0;
  if (scratch_bytes > 0) {
    DNNL(dnnl_memory_create(&e.scratchpad, scratch, lib.engine, DNNL_MEMORY_NONE));
    reserve(&c->scratchpad, scratch_bytes);
  }
  DNNL(dnnl_primitive_create(&e.primitive, pd));
  DNNL(dnnl_primitive_desc_destroy(pd));
  lib.created++;
  return e;
}

/* The cached primitive of m, created if m is new. A few dozen problems in a model, so a
 * linear search costs nothing next to the product. */
static struct cached_matmul *lookup(struct cache *c, const struct onednn_matmul *m) {
  for (size_t i = 0; i < c->count; i++)
    if (memcmp(&c->entries[i].key, m, sizeof *m) == 0) return &c->entries[i];
  pthread_once(&lib.once, start);
  if (!c->stream) DNNL(dnnl_stream_create(&c->stream, lib.engine, dnnl_stream_default_flags));
  if (c->count == c->capacity) {
    c->capacity = c->capacity ? 2 * c->capacity : 32;
    struct cached_matmul *grown = realloc(c->entries, c->capacity * sizeof *grown);
    if (!grown) fsdp_fatal("oneDNN matmul: out of memory for %zu cached primitives", c->capacity);
    c->entries = grown;
  }
  c->entries[c->count] = create(c, m);
  return &c->entries[c->count++];
}

/* Below this many elements a conversion stays on the calling thread. */
enum { CONVERT_ALONE = 1 << 15 };

/* A widened operand's runs, from data to its compact fp32 copy, or back (pack) into c's
 * rows; on the calling thread's OpenMP team where it is large enough and the thread is
 * not already inside a team's region (onednn_matmul_alone's callers). */
static void convert(enum dtype d, const struct runs *r, uint16_t *narrow, float *wide, int pack) {
  size_t total = r->count * r->len;
  /* Runs side by side are one, cut into pieces of CONVERT_ALONE. */
  struct runs p = *r;
  if (r->stride == r->len) p = (struct runs){(total + CONVERT_ALONE - 1) / CONVERT_ALONE, CONVERT_ALONE, CONVERT_ALONE};
#pragma omp parallel for schedule(static) if (total > CONVERT_ALONE && !omp_in_parallel())
  for (size_t j = 0; j < p.count; j++) {
    size_t n = total - j * p.len < p.len ? total - j * p.len : p.len;
    if (pack)
      dtype_pack(d, wide + j * p.len, narrow + j * p.stride, n);
    else
      dtype_unpack(d, narrow + j * p.stride, wide + j * p.len, n);
  }
}

static void run(struct cache *c, const struct onednn_matmul *m, const void *a, const void *b, const void *bias,
                void *out) {
  struct cached_matmul *e = lookup(c, m);
  /* oneDNN's memory objects take non-const handles; the primitive only reads a, b and bias. */
  void *data[OPERANDS] = {(void *)a, (void *)b, (void *)bias, out};
  enum dtype narrow = (enum dtype)m->dtype;
  for (int i = 0; i < OPERANDS; i++) {
    if (!e->widened[i] || !e->mem[i]) continue;
    const struct runs *r = &e->runs[i];
    float *wide = reserve(&c->wide[i], r->count * r->len * sizeof(float));
    if (i != C || m->accumulate) convert(narrow, r, data[i], wide, 0);
    data[i] = wide;
  }
  dnnl_exec_arg_t args[OPERANDS + 1];
  int nargs = 0;
  static const int arg_of[OPERANDS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
  for (int i = 0; i < OPERANDS; i++) {
    if (!e->mem[i]) continue;
    DNNL(dnnl_memory_set_data_handle(e->mem[i], data[i]));
    args[nargs++] = (dnnl_exec_arg_t){arg_of[i], e->mem[i]};
  }
  if (e->scratchpad) {
    DNNL(dnnl_memory_set_data_handle(e->scratchpad, c->scratchpad.data));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratchpad};
  }
  DNNL(dnnl_primitive_execute(e->primitive, c->stream, nargs, args));
  DNNL(dnnl_stream_wait(c->stream));
  if (e->widened[C]) convert(narrow, &e->runs[C], out, data[C], 1);
}

void onednn_matmul(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c) {
  pthread_mutex_lock(&lib.mutex);
  run(&lib.team, m, a, b, bias, c);
  pthread_mutex_unlock(&lib.mutex);
}

void onednn_matmul_alone(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c) {
  if (!own) {
    pthread_once(&lib.once, start);
    own = calloc(1, sizeof *own);
    if (!own || pthread_setspecific(lib.owner, own) != 0) fsdp_fatal("oneDNN matmul: cannot make a thread's cache");
  }
  run(own, m, a, b, bias, c);
}

void onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  DNNL(dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, a, lda, b, ldb, beta, c, ldc));
}

const char *onednn_isa(void) {
  switch (dnnl_get_effective_cpu_isa()) {
  case dnnl_cpu_isa_sse41: return "sse41";
  case dnnl_cpu_isa_avx: return "avx";
  case dnnl_cpu_isa_avx2: return "avx2";
  case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
#if defined(__aarch64__)
  default: return "aarch64";
#else
  default: return "any";
#endif
  }
}

uint64_t onednn_primitives_created(void) { return lib.created; }

int onednn_native(enum dtype d) {
  if (d != DTYPE_F16) return d == DTYPE_F32 || native_bf16();
  /* oneDNN says whether it has fp16 products by making one. */
  pthread_once(&lib.once, start);
  struct onednn_matmul m = {.dtype = DTYPE_F16, .a = onednn_matrix(16, 16), .b = onednn_matrix(16, 16),
                            .c = onednn_matrix(16, 16)};
  int64_t dtypes[OPERANDS];
  operand_dtypes(&m, dtypes);
  struct onednn_operand layout[OPERANDS] = {m.a, m.b, bias_row(&m), m.c};
  dnnl_memory_desc_t md[OPERANDS];
  dnnl_primitive_desc_t pd;
  if (describe(&m, layout, dtypes, md, &pd) != dnnl_success) return 0;
  DNNL(dnnl_primitive_desc_destroy(pd));
  return 1;
}
