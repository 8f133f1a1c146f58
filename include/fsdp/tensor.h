/* A typed view of memory on some device: what the kernels (fsdp/nn.h) take. It
 * owns nothing; the memory belongs to whoever allocated it (fsdp/device.h). Row-major,
 * contiguous. */
#ifndef FSDP_TENSOR_H
#define FSDP_TENSOR_H

#include <stddef.h>

#include "fsdp/dtype.h"

enum { TENSOR_MAX_DIMS = 4 };

struct tensor {
  void *data;
  enum dtype dtype;
  int ndim;
  size_t shape[TENSOR_MAX_DIMS];
};

struct tensor tensor_1d(void *data, enum dtype dtype, size_t n);
struct tensor tensor_2d(void *data, enum dtype dtype, size_t rows, size_t cols);
struct tensor tensor_4d(void *data, enum dtype dtype, size_t d0, size_t d1, size_t d2, size_t d3);
/* No data: an optional operand that is absent (a gradient nobody needs, no bias). */
extern const struct tensor TENSOR_NONE;

size_t tensor_numel(const struct tensor *t);
size_t tensor_bytes(const struct tensor *t);
/* The size of the last dimension, and the product of the others (the rows). */
size_t tensor_cols(const struct tensor *t);
size_t tensor_rows(const struct tensor *t);
/* Elements [begin, begin + n) of t as a 1-d tensor. */
struct tensor tensor_slice(const struct tensor *t, size_t begin, size_t n);

#endif
