/* Named float32 tensors written one after another for the PyTorch checks
 * (tools/tensor_file.py reads them): [name length: int32][name][ndim: int32]
 * [dims: int32 x ndim][data: float32], little-endian. */
#ifndef FSDP_TESTS_TENSOR_FILE_H
#define FSDP_TESTS_TENSOR_FILE_H

#include <stdio.h>

FILE *tensor_file_create(const char *path);
void tensor_file_write(FILE *f, const char *name, const float *data, int ndim, const int *dims);
/* Integer tensors (token ids) are stored as float32: exact below 2^24. */
void tensor_file_write_ints(FILE *f, const char *name, const int *data, int ndim, const int *dims);
void tensor_file_close(FILE *f);

#endif
