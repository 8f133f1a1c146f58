/* Counter-based random numbers (Philox4x32-10): every value is a pure function of
 * (seed, stream, index), so any rank can produce any element without the others. */
#ifndef FSDP_RNG_H
#define FSDP_RNG_H

#include <stdint.h>

/* Four 32-bit words for the 128-bit counter (index, stream) under key seed. */
void philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]);

/* Standard normal (Box-Muller on one Philox block). */
float rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* std times a standard normal truncated to [-bound, bound] (bound >= std > 0), by
 * rejection: the first value std * rng_normal(seed, stream, index + k * 2^48), k = 0, 1,
 * ..., within the bounds. For index < 2^48 it is a pure function of (seed, stream, index)
 * like rng_normal, and equals std * rng_normal(seed, stream, index) wherever that is in
 * bounds; bound >= std accepts more than two draws in three. */
float rng_trunc_normal(uint64_t seed, uint64_t stream, uint64_t index, float std, float bound);
/* Uniform integer in [0, n), n > 0. */
uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);

#endif
