/* Private to src/nn/cpu: the norms' row sums for LANES rows at once, one row in each lane
 * of an AVX-512 vector or of two AVX2 ones (lanes.c). Each row's terms still add in column order, so every
 * sum is the one the scalar loop over the row forms, to the bit, sixteen rows at a time:
 * a serial sum is a chain of dependent adds that a vector across columns could only
 * shorten by reordering it, which would change the fp32 results.
 *
 * The rows are fp32, each stride floats after the one before. Only for simd_isa() at
 * least SIMD_AVX2 (fsdp/simd.h). */
#ifndef FSDP_NN_CPU_LANES_H
#define FSDP_NN_CPU_LANES_H

#include <stddef.h>

#include "fsdp/simd.h"

enum { LANES = 16 };

/* Rows per task of a norm kernel: LANES where the sums run in lanes, else one. A task's
 * last rows, fewer than LANES, take the scalar sums, which give the same bits. */
static inline int norm_rows_per_task(void) { return simd_isa() >= SIMD_AVX2 ? LANES : 1; }

/* LayerNorm's statistics: mean = sum(x) / C, rstd = 1 / sqrt(sum((x - mean)^2) / C + eps).
 * t: scratch of LANES * C floats, 64-byte aligned, for the rows transposed between the
 * two passes. */
void lanes_layernorm_stats(float *mean, float *rstd, const float *x, size_t stride, int C, float eps, float *t);

/* LayerNorm's backward sums, with dnorm = d * weight: mean(dnorm) and mean(dnorm * (x - mean) * rstd). */
void lanes_layernorm_backward_means(float *dnorm_mean, float *dnorm_norm_mean, const float *d, const float *x,
                                    size_t stride, const float *weight, const float *mean, const float *rstd, int C);

/* RMSNorm's rstd = 1 / sqrt(sum(x^2) / C + eps). */
void lanes_rmsnorm_rstd(float *rstd, const float *x, size_t stride, int C, float eps);

/* RMSNorm's backward sum: mean(d * weight * x * rstd). */
void lanes_rmsnorm_backward_mean(float *dnorm_norm_mean, const float *d, const float *x, size_t stride,
                                 const float *weight, const float *rstd, int C);

#endif
