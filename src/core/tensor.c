#include "fsdp/tensor.h"

#include "fsdp/error.h"

const struct tensor TENSOR_NONE = {0};

struct tensor tensor_1d(void *data, enum dtype dtype, size_t n) {
  return (struct tensor){data, dtype, 1, {n}};
}

struct tensor tensor_2d(void *data, enum dtype dtype, size_t rows, size_t cols) {
  return (struct tensor){data, dtype, 2, {rows, cols}};
}

struct tensor tensor_4d(void *data, enum dtype dtype, size_t d0, size_t d1, size_t d2, size_t d3) {
  return (struct tensor){data, dtype, 4, {d0, d1, d2, d3}};
}

size_t tensor_numel(const struct tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return t->ndim ? n : 0;
}

size_t tensor_bytes(const struct tensor *t) { return tensor_numel(t) * dtype_size(t->dtype); }

size_t tensor_cols(const struct tensor *t) {
  FSDP_CHECK(t->ndim >= 1);
  return t->shape[t->ndim - 1];
}

size_t tensor_rows(const struct tensor *t) { return tensor_numel(t) / tensor_cols(t); }

struct tensor tensor_slice(const struct tensor *t, size_t begin, size_t n) {
  FSDP_CHECK(begin + n <= tensor_numel(t));
  return tensor_1d((char *)t->data + begin * dtype_size(t->dtype), t->dtype, n);
}
