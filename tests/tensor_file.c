#include "tensor_file.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void write_or_die(FILE *f, const void *data, size_t bytes) {
  if (fwrite(data, 1, bytes, f) != bytes) {
    perror("tensor_file: write failed");
    exit(1);
  }
}

FILE *tensor_file_create(const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

static size_t write_header(FILE *f, const char *name, int ndim, const int *dims) {
  int32_t name_len = (int32_t)strlen(name), n = ndim;
  write_or_die(f, &name_len, sizeof name_len);
  write_or_die(f, name, (size_t)name_len);
  write_or_die(f, &n, sizeof n);
  size_t count = 1;
  for (int d = 0; d < ndim; d++) {
    int32_t dim = dims[d];
    write_or_die(f, &dim, sizeof dim);
    count *= (size_t)dims[d];
  }
  return count;
}

void tensor_file_write(FILE *f, const char *name, const float *data, int ndim, const int *dims) {
  size_t count = write_header(f, name, ndim, dims);
  write_or_die(f, data, count * sizeof(float));
}

void tensor_file_write_ints(FILE *f, const char *name, const int *data, int ndim, const int *dims) {
  size_t count = write_header(f, name, ndim, dims);
  for (size_t i = 0; i < count; i++) {
    float value = (float)data[i];
    write_or_die(f, &value, sizeof value);
  }
}

void tensor_file_close(FILE *f) {
  if (fclose(f) != 0) {
    perror("tensor_file: close failed");
    exit(1);
  }
}
