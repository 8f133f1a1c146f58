#include "fsdp/rng.h"

#include <math.h>

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"). */
static const uint32_t PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u;
static const uint32_t PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u;

static void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t product = (uint64_t)a * b;
  *hi = (uint32_t)(product >> 32);
  *lo = (uint32_t)product;
}

void philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32);
  uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(PHILOX_M0, c0, &hi0, &lo0);
    mulhilo(PHILOX_M1, c2, &hi1, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* 24 random bits give every float in [0, 1) on a 2^-24 grid. */
static float to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

float rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t r[4];
  philox4x32(seed, stream, index, r);
  /* 1 - u keeps the argument of log in (0, 1]. Double keeps the tails exact. */
  double u1 = 1.0 - (double)to_unit(r[0]);
  double u2 = (double)to_unit(r[1]);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float rng_trunc_normal(uint64_t seed, uint64_t stream, uint64_t index, float std, float bound) {
  for (uint64_t k = 0;; k++) {
    float x = std * rng_normal(seed, stream, index + (k << 48));
    if (fabsf(x) <= bound) return x;
  }
}

uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
  uint32_t r[4];
  philox4x32(seed, stream, index, r);
  uint64_t x = ((uint64_t)r[0] << 32) | r[1];
  return x % n;
}
