/* Element types of parameters, gradients and collectives: fp32, and the two 16-bit
 * floating-point formats (bfloat16: fp32's exponent, 8 significant bits; IEEE binary16:
 * 5 exponent bits, 11 significant bits). The 16-bit values are held as their bit
 * patterns in uint16_t, and all arithmetic on them happens in fp32. Every narrowing
 * rounds to nearest, ties to even, as PyTorch's .to(torch.bfloat16 / torch.float16). */
#ifndef FSDP_DTYPE_H
#define FSDP_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* The first three are the floating-point formats of parameters and gradients; int32
 * (token ids) and fp64 (reductions such as the grad norm's sum) type the other tensors. */
enum dtype { DTYPE_F32, DTYPE_BF16, DTYPE_F16, DTYPE_I32, DTYPE_F64 };

size_t dtype_size(enum dtype d);      /* 4, 2, 2, 4, 8 */
const char *dtype_name(enum dtype d); /* "fp32", "bf16", "fp16", "int32", "fp64" */
/* The parameter dtype named ("fp32", "bf16" or "fp16"), or -1 for any other name. */
int dtype_parse(const char *name);

/* A NaN stays a NaN (made quiet, sign and leading payload bits kept); infinities stay
 * infinite; fp32 values past the format's range round to infinity. */
uint16_t f32_to_bf16(float x);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_f16(float x);
float f16_to_f32(uint16_t h);

/* x[i] = the value of x[i] rounded to d and widened back (DTYPE_F32: unchanged). */
void dtype_round(enum dtype d, float *x, size_t n);

/* 16-bit d only: out-of-place conversions. */
void dtype_pack(enum dtype d, const float *src, uint16_t *dst, size_t n);
void dtype_unpack(enum dtype d, const uint16_t *src, float *dst, size_t n);
/* The same on rows rows of cols elements, each row of src and dst its stride (in elements)
 * after the one before: a head's slice of an activation, in one call (a call a row of 64
 * cost more than its conversion). */
void dtype_pack_rows(enum dtype d, const float *src, size_t src_stride, uint16_t *dst, size_t dst_stride, size_t rows,
                     size_t cols);
void dtype_unpack_rows(enum dtype d, const uint16_t *src, size_t src_stride, float *dst, size_t dst_stride,
                       size_t rows, size_t cols);

/* In place, for buffers of n floats (4n bytes), 16-bit d only:
 * pack: the n floats become n 16-bit values in bytes [0, 2n) (bytes [2n, 4n) left unspecified);
 * unpack_upper: n 16-bit values stored in bytes [2n, 4n) become n floats over the whole buffer.
 * Used so that an all-gather of 16-bit parameters lands in the upper half of the fp32 buffer the
 * kernels read and is widened there, and gradients are narrowed in place before a 16-bit
 * reduce-scatter. */
void dtype_pack_in_place(enum dtype d, float *buf, size_t n);
void dtype_unpack_upper_in_place(enum dtype d, float *buf, size_t n);

#endif
