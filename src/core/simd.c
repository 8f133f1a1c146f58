#include "fsdp/simd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static enum simd_isa detected;
static atomic_int limit = SIMD_AVX512_BF16;

static void detect(void) {
  const char *forced = getenv("FSDP_SIMD");
  if (forced && *forced && strcmp(forced, "scalar") != 0)
    fsdp_fatal("FSDP_SIMD must be scalar (or unset), not '%s'", forced);
  __builtin_cpu_init();
  if (forced && *forced) detected = SIMD_SCALAR;
  else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16"))
    detected = SIMD_AVX512_BF16;
  else
    detected = __builtin_cpu_supports("avx512f") ? SIMD_AVX512 : SIMD_SCALAR;
}

enum simd_isa simd_isa(void) {
  pthread_once(&detect_once, detect);
  int cap = atomic_load_explicit(&limit, memory_order_relaxed);
  return (int)detected < cap ? detected : (enum simd_isa)cap;
}

void simd_limit(enum simd_isa isa) { atomic_store_explicit(&limit, (int)isa, memory_order_relaxed); }
