/* Private to src/nn/cpu: the exponentials of a row of attention scores (exp_row.c), on
 * AVX-512 where simd_isa() has it and on its scalar twin, the same bits either way. Its
 * own exp, not glibc's: glibc's vector expf falls back to scalar code for every lane out
 * of its range (a hidden key's, an underflowing one's), and its scalar expf gives other
 * bits than the vector one. */
#ifndef FSDP_NN_CPU_EXP_ROW_H
#define FSDP_NN_CPU_EXP_ROW_H

/* row[c] = exp(row[c] * scale - shift) for c < seen, 0 for seen <= c < n; returns the sum
 * of the row's new values, in sixteen partial sums (c mod 16, in column order) added
 * pairwise (lane i and lane i + 8, then i + 4, i + 2, i + 1). exp is within 2 ulp where
 * its result is a normal fp32 value, 0 below -87 (no subnormals), infinity above 89,
 * NaN for NaN. */
float exp_row(float *row, int n, int seen, float scale, float shift);

#endif
