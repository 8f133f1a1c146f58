#include "onednn.h"

#include <dnnl.h>
#include <dnnl_debug.h>
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

/* A primitive with the memory objects it runs on: they hold a problem's layouts, and
 * each call only points them at its data. An fp16 problem that oneDNN cannot run on
 * this CPU (its fp16 kernels need AVX512-FP16) runs as its fp32 twin on widened copies:
 * widening is exact, so the product still accumulates in fp32 and c is rounded once,
 * as the fp16 kernel would do it. */
struct cached_matmul {
  struct onednn_matmul key;
  dnnl_primitive_t primitive;
  dnnl_memory_t mem[OPERANDS]; /* mem[BIAS] NULL without a bias */
  dnnl_memory_t scratchpad;    /* NULL: the primitive needs none */
  int widened;                 /* fp16 operands, passed to the primitive as fp32 */
  size_t span[OPERANDS];       /* elements from an operand's first to its last, gaps included */
};

/* A buffer that only grows, so that a steady step allocates nothing. */
struct buffer {
  void *data;
  size_t bytes;
};

/* One engine and stream for the process, the primitives seen so far, and the buffers
 * they share: one scratchpad (user mode, so that oneDNN keeps no buffer per thread) and
 * the fp32 copies of widened operands. The mutex makes products from several threads
 * run one at a time: only a stream's thread calls them, and two would fight for the
 * cores anyway. */
static struct {
  pthread_mutex_t mutex;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  struct cached_matmul *cache;
  size_t count, capacity;
  struct buffer scratchpad, wide[OPERANDS];
  uint64_t created;
} lib = {.mutex = PTHREAD_MUTEX_INITIALIZER};

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

struct onednn_operand onednn_matrix(int64_t rows, int64_t cols) {
  return (struct onednn_operand){{rows, cols}, {cols, 1}};
}

struct onednn_operand onednn_transposed(int64_t rows, int64_t cols) {
  return (struct onednn_operand){{cols, rows}, {1, cols}};
}

static dnnl_data_type_t data_type(int64_t d) {
  switch (d) {
  case DTYPE_F32: return dnnl_f32;
  case DTYPE_BF16: return dnnl_bf16;
  case DTYPE_F16: return dnnl_f16;
  default: fsdp_fatal("oneDNN matmul: no %s operands", dtype_name((enum dtype)d));
  }
}

/* The bias as the primitive takes it: a (1, N) row. */
static struct onednn_operand bias_row(const struct onednn_matmul *m) {
  return onednn_matrix(1, m->c.dims[1]);
}

static size_t span(const struct onednn_operand *o) {
  return (size_t)(o->dims[0] - 1) * (size_t)o->strides[0] + (size_t)(o->dims[1] - 1) * (size_t)o->strides[1] + 1;
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

/* The primitive's descriptor for m's layouts, its operands in dtype. */
static dnnl_status_t describe(const struct onednn_matmul *m, int64_t dtype, dnnl_memory_desc_t md[OPERANDS],
                              dnnl_primitive_desc_t *pd) {
  struct onednn_operand bias = bias_row(m);
  const struct onednn_operand *layout[OPERANDS] = {&m->a, &m->b, &bias, &m->c};
  for (int i = 0; i < OPERANDS; i++) {
    dnnl_dims_t dims = {0}, strides = {0};
    memcpy(dims, layout[i]->dims, sizeof layout[i]->dims);
    memcpy(strides, layout[i]->strides, sizeof layout[i]->strides);
    DNNL(dnnl_memory_desc_init_by_strides(&md[i], 2, dims, data_type(dtype), strides));
  }
  dnnl_matmul_desc_t desc;
  DNNL(dnnl_matmul_desc_init(&desc, &md[A], &md[B], m->bias ? &md[BIAS] : NULL, &md[C]));
  dnnl_primitive_attr_t attr = attributes(m);
  dnnl_status_t status = dnnl_primitive_desc_create(pd, &desc, attr, lib.engine, NULL);
  DNNL(dnnl_primitive_attr_destroy(attr));
  return status;
}

static struct cached_matmul create(const struct onednn_matmul *m) {
  struct cached_matmul e = {.key = *m};
  dnnl_memory_desc_t md[OPERANDS];
  dnnl_primitive_desc_t pd;
  dnnl_status_t status = describe(m, m->dtype, md, &pd);
  if (status == dnnl_unimplemented && m->dtype == DTYPE_F16) {
    status = describe(m, DTYPE_F32, md, &pd);
    e.widened = 1;
  }
  if (status != dnnl_success) {
    fsdp_fatal("oneDNN has no %s matmul for (%lld x %lld) @ (%lld x %lld)%s%s: %s", dtype_name((enum dtype)m->dtype),
               (long long)m->a.dims[0], (long long)m->a.dims[1], (long long)m->b.dims[0], (long long)m->b.dims[1],
               m->bias ? ", bias" : "", m->accumulate ? ", accumulating" : "", dnnl_status2str(status));
  }
  struct onednn_operand bias = bias_row(m);
  const struct onednn_operand *layout[OPERANDS] = {&m->a, &m->b, &bias, &m->c};
  for (int i = 0; i < OPERANDS; i++) {
    e.span[i] = span(layout[i]);
    if (i != BIAS || m->bias) DNNL(dnnl_memory_create(&e.mem[i], &md[i], lib.engine, DNNL_MEMORY_NONE));
  }
  const dnnl_memory_desc_t *scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  size_t scratch_bytes = scratch ? dnnl_memory_desc_get_size(scratch) : 0;
  if (scratch_bytes > 0) {
    DNNL(dnnl_memory_create(&e.scratchpad, scratch, lib.engine, DNNL_MEMORY_NONE));
    reserve(&lib.scratchpad, scratch_bytes);
  }
  DNNL(dnnl_primitive_create(&e.primitive, pd));
  DNNL(dnnl_primitive_desc_destroy(pd));
  lib.created++;
  return e;
}

/* The cached primitive of m, created if m is new; under lib.mutex. A few dozen problems
 * in a model, so a linear search costs nothing next to the product. */
static struct cached_matmul *lookup(const struct onednn_matmul *m) {
  for (size_t i = 0; i < lib.count; i++)
    if (memcmp(&lib.cache[i].key, m, sizeof *m) == 0) return &lib.cache[i];
  if (!lib.engine) {
    DNNL(dnnl_engine_create(&lib.engine, dnnl_cpu, 0));
    DNNL(dnnl_stream_create(&lib.stream, lib.engine, dnnl_stream_default_flags));
  }
  if (lib.count == lib.capacity) {
    lib.capacity = lib.capacity ? 2 * lib.capacity : 32;
    struct cached_matmul *grown = realloc(lib.cache, lib.capacity * sizeof *grown);
    if (!grown) fsdp_fatal("oneDNN matmul: out of memory for %zu cached primitives", lib.capacity);
    lib.cache = grown;
  }
  lib.cache[lib.count] = create(m);
  return &lib.cache[lib.count++];
}

void onednn_matmul(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c) {
  pthread_mutex_lock(&lib.mutex);
  struct cached_matmul *e = lookup(m);
  /* oneDNN's memory objects take non-const handles; the primitive only reads a, b and bias. */
  void *data[OPERANDS] = {(void *)a, (void *)b, (void *)bias, c};
  for (int i = 0; i < OPERANDS; i++) {
    if (!e->widened || !e->mem[i]) continue;
    float *wide = reserve(&lib.wide[i], e->span[i] * sizeof(float));
    /* c too, whether or not the product accumulates: the gaps of a strided c are
     * written back as they were. */
    dtype_unpack(DTYPE_F16, data[i], wide, e->span[i]);
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
    DNNL(dnnl_memory_set_data_handle(e->scratchpad, lib.scratchpad.data));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratchpad};
  }
  DNNL(dnnl_primitive_execute(e->primitive, lib.stream, nargs, args));
  DNNL(dnnl_stream_wait(lib.stream));
  if (e->widened) dtype_pack(DTYPE_F16, data[C], c, e->span[C]);
  pthread_mutex_unlock(&lib.mutex);
}

void onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  DNNL(dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, a, lda, b, ldb, beta, c, ldc));
}

uint64_t onednn_primitives_created(void) {
  pthread_mutex_lock(&lib.mutex);
  uint64_t n = lib.created;
  pthread_mutex_unlock(&lib.mutex);
  return n;
}
