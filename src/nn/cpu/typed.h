/* Private to src/nn/cpu: how a layer kernel reads and writes its compute-dtype tensors
 * (fp32, bf16 or fp16, the one dtype its contract in ../contract.c gives all of them),
 * the twin of ../cuda/typed.cuh. A kernel computes on fp32 spans: an fp32 tensor's own
 * floats, or a 16-bit tensor's elements widened (exactly) into the thread's scratch; an
 * output span computed in scratch is stored back rounded once to the tensor's dtype by
 * dtype.c's conversions (to nearest even, NaN kept). So each kernel has one fp32 body,
 * which fp32 tensors run in place as they always have, and a 16-bit result is that
 * body's result on the widened inputs, rounded once. A sum runs in fp32 (or fp64) over
 * its whole reduction, in registers or scratch, never through a 16-bit tensor. */
#ifndef FSDP_NN_CPU_TYPED_H
#define FSDP_NN_CPU_TYPED_H

#include <stdint.h>
#include <string.h>

#include "cpu.h"

/* Elements per task of the elementwise kernels: a multiple of any vector length, and a
 * few of them fit the L1 cache as fp32. */
enum { SPAN_CHUNK = 2048 };

/* The thread's scratch for the fp32 copies of `floats` elements of a 16-bit op; an fp32
 * op (d) needs none: NULL. */
static inline float *span_scratch(enum dtype d, size_t floats) {
  return d == DTYPE_F32 ? NULL : cpu_scratch(floats * sizeof(float));
}

/* Floats [at, ...) of a span_scratch buffer (NULL for an fp32 op's, which has none). */
static inline float *scratch_at(float *buf, size_t at) { return buf ? buf + at : NULL; }

/* Elements [first, first + n) of t as fp32: t's own floats, or widened into buf. */
static inline const float *span_in(struct tensor t, size_t first, size_t n, float *buf) {
  if (t.dtype == DTYPE_F32) return (const float *)t.data + first;
  dtype_unpack(t.dtype, (const uint16_t *)t.data + first, buf, n);
  return buf;
}

/* Where a kernel writes elements [first, ...) of t: t's own floats, or buf, which
 * span_store then rounds into t. */
static inline float *span_out(struct tensor t, size_t first, float *buf) {
  return t.dtype == DTYPE_F32 ? (float *)t.data + first : buf;
}

/* span_out for an output the kernel adds to: it holds the current values. */
static inline float *span_inout(struct tensor t, size_t first, size_t n, float *buf) {
  return (float *)span_in(t, first, n, buf);
}

/* Stores n elements computed where span_out or span_inout said: rounded once into a
 * 16-bit t; an fp32 t holds them already. */
static inline void span_store(struct tensor t, size_t first, size_t n, const float *span) {
  if (t.dtype != DTYPE_F32) dtype_pack(t.dtype, span, (uint16_t *)t.data + first, n);
}

/* Elements [first, first + n) of t copied, or widened, into dst. */
static inline void span_get(struct tensor t, size_t first, size_t n, float *dst) {
  if (t.dtype == DTYPE_F32)
    memcpy(dst, (const float *)t.data + first, n * sizeof *dst);
  else
    dtype_unpack(t.dtype, (const uint16_t *)t.data + first, dst, n);
}

/* n floats from src into elements [first, first + n) of t, rounded once if 16-bit. */
static inline void span_put(struct tensor t, size_t first, size_t n, const float *src) {
  if (t.dtype == DTYPE_F32)
    memcpy((float *)t.data + first, src, n * sizeof *src);
  else
    dtype_pack(t.dtype, src, (uint16_t *)t.data + first, n);
}

/* rows rows of cols elements of t, the first at element first and each stride elements
 * after the one before, into buf, rows * cols contiguous floats: a head's slice of an
 * activation, for the products, which take fp32. */
static inline void rows_in(struct tensor t, size_t first, int rows, int cols, size_t stride, float *buf) {
  if (t.dtype != DTYPE_F32) {
    dtype_unpack_rows(t.dtype, (const uint16_t *)t.data + first, stride, buf, (size_t)cols, (size_t)rows, (size_t)cols);
    return;
  }
  for (int r = 0; r < rows; r++) span_get(t, first + (size_t)r * stride, (size_t)cols, buf + (size_t)r * cols);
}

/* Rows a column sum (a bias's or a norm's parameter gradient, a block of columns a task)
 * takes at once through rows_view: one call widens that many 16-bit rows, not one. */
enum { SUM_ROWS = 32 };

/* rows rows of cols elements of t (the first at element first, each stride elements after
 * the one before) as fp32 rows *ld elements apart: t's own (*ld = stride), or widened
 * into buf (rows x cols floats, *ld = cols). */
static inline const float *rows_view(struct tensor t, size_t first, int rows, int cols, size_t stride, float *buf,
                                     size_t *ld) {
  if (t.dtype == DTYPE_F32) {
    *ld = stride;
    return (const float *)t.data + first;
  }
  dtype_unpack_rows(t.dtype, (const uint16_t *)t.data + first, stride, buf, (size_t)cols, (size_t)rows, (size_t)cols);
  *ld = (size_t)cols;
  return buf;
}

/* The reverse of rows_in: buf's rows stored into t, rounded once if 16-bit. */
static inline void rows_store(struct tensor t, size_t first, int rows, int cols, size_t stride, const float *buf) {
  if (t.dtype != DTYPE_F32) {
    dtype_pack_rows(t.dtype, buf, (size_t)cols, (uint16_t *)t.data + first, stride, (size_t)rows, (size_t)cols);
    return;
  }
  for (int r = 0; r < rows; r++) span_put(t, first + (size_t)r * stride, (size_t)cols, buf + (size_t)r * cols);
}

/* An elementwise op: its body computes n elements from its operands' fp32 spans, given in
 * the order of the operands (elementwise.c runs it over chunks on the OpenMP threads). */
typedef void (*elementwise_body)(float *const *spans, int n);

enum span_use {
  SPAN_READ,   /* an input */
  SPAN_WRITE,  /* an output */
  SPAN_UPDATE, /* an output the body adds to (a gradient) */
};

struct elementwise_operand {
  struct tensor t; /* of n elements or more, each op's operands the same dtype */
  enum span_use use;
};

enum { ELEMENTWISE_MAX_OPERANDS = 5 };

/* Runs body over elements [0, n) of the operands, SPAN_CHUNK at a time. An output may be
 * an input too (in place): a chunk's inputs are all read before its outputs are stored. */
void elementwise(elementwise_body body, size_t n, int count, const struct elementwise_operand *operands);

#endif
