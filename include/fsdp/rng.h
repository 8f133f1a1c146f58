/* Counter-based random numbers (Philox4x32-10): every value is a pure function of
 * (seed, stream, index), so any rank can produce any element without the others. */
#ifndef FSDP_RNG_H
#define FSDP_RNG_H

#include <stdint.h>

/* Four 32-bit words for the 128-bit counter (index, stream) under key seed. */
void philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]);

/* Standard normal (Box-Muller on one Philox block). */
float rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform integer in [0, n), n > 0. */
uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);

#endif
