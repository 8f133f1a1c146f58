/* The CPU kernels' table for the instruction set simd_isa() allows (variant.h): asked at
 * every launch, so that simd_limit and FSDP_SIMD cap the compiler's vector code as they
 * cap the hand-written paths. */
#include "cpu.h"
#include "fsdp/simd.h"

extern const struct nn_backend NN_CPU_scalar;
#if defined(__x86_64__)
extern const struct nn_backend NN_CPU_avx2, NN_CPU_avx512;
#endif

const struct nn_backend *nn_cpu_backend(void) {
#if defined(__x86_64__)
  enum simd_isa isa = simd_isa();
  if (isa >= SIMD_AVX512) return &NN_CPU_avx512;
  if (isa >= SIMD_AVX2) return &NN_CPU_avx2;
#endif
  return &NN_CPU_scalar;
}
