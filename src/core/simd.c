#include "fsdp/simd.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

static const char *const NAMES[] = {[SIMD_SCALAR] = "scalar", [SIMD_AVX2] = "avx2", [SIMD_AVX512] = "avx512",
                                    [SIMD_AVX512_BF16] = "avx512_bf16"};
enum { NUM_ISAS = sizeof NAMES / sizeof NAMES[0] };

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static enum simd_isa detected;
static atomic_int limit = SIMD_AVX512_BF16;

#if defined(__x86_64__)
/* F16C from CPUID leaf 1: clang before 15 has no "f16c" for __builtin_cpu_supports (the
 * fuzzing build, scripts/fuzz.sh, is clang's). The AVX2 check before it covers the OS. */
static int has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* libgcc's checks include the OS's: the vector registers' state saved (XCR0). The levels
 * nest, as x86-64's do (v3, v4): each has the one below. */
static enum simd_isa cpu_isa(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_f16c()) return SIMD_SCALAR;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl"))
    return SIMD_AVX2;
  return __builtin_cpu_supports("avx512bf16") ? SIMD_AVX512_BF16 : SIMD_AVX512;
#else
  return SIMD_SCALAR;
#endif
}

static void detect(void) {
  detected = cpu_isa();
  const char *cap = getenv("FSDP_SIMD");
  if (!cap || !*cap) return;
  for (int i = 0; i < NUM_ISAS; i++)
    if (strcmp(cap, NAMES[i]) == 0) {
      if ((enum simd_isa)i < detected) detected = (enum simd_isa)i;
      return;
    }
  fsdp_fatal("FSDP_SIMD must be scalar, avx2, avx512 or avx512_bf16 (or unset), not '%s'", cap);
}

enum simd_isa simd_isa(void) {
  pthread_once(&detect_once, detect);
  int cap = atomic_load_explicit(&limit, memory_order_relaxed);
  return (int)detected < cap ? detected : (enum simd_isa)cap;
}

void simd_limit(enum simd_isa isa) { atomic_store_explicit(&limit, (int)isa, memory_order_relaxed); }

const char *simd_isa_name(enum simd_isa isa) {
  if ((unsigned)isa >= NUM_ISAS) fsdp_fatal("simd_isa_name: unknown isa %d", (int)isa);
  return NAMES[isa];
}
