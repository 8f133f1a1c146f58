/* The CPU's sum of squares (the grad norm's, src/nn/cpu/runtime.c), whose blocks are
 * spread over OpenMP's threads: within 1e-12 of the sum in long double (a chain of a
 * thousand double adds; each square of an fp32 value is exact), added to what the
 * sum held, and the same bits for 1, 2, 3 and 8 threads, at sizes of one block, of a
 * partial last block, and of more elements than the 256 blocks of the least block size
 * hold (the blocks then grow). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/rng.h"
#include "fsdp/stream.h"

static int checks, failures;

static void check(int ok, const char *what, size_t n) {
  checks++;
  if (!ok) {
    failures++;
    fprintf(stderr, "FAIL: %s (n %zu)\n", what, n);
  }
}

static double sum_squares(const struct nn_ctx *cpu, const float *x, size_t n, double start, int threads) {
  omp_set_num_threads(threads);
  double sum = start;
  nn_sum_squares(cpu, tensor_1d(&sum, DTYPE_F64, 1), tensor_1d((float *)x, DTYPE_F32, n));
  return sum;
}

int main(void) {
  struct nn_ctx cpu = {device_cpu(), device_host_stream_create(device_cpu(), "sum_squares")};
  static const size_t sizes[] = {0, 1, 31, 16384, 16385, 3 * 16384 + 5, 256 * 16384 + 77, 600 * 16384 + 3};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    float *x = fsdp_xmalloc((n ? n : 1) * sizeof *x);
    long double want = 0.5L;
    for (size_t i = 0; i < n; i++) {
      x[i] = rng_normal(20261207, s, i) * 3.0f;
      want += (long double)x[i] * x[i];
    }
    double one = sum_squares(&cpu, x, n, 0.5, 1);
    check(fabsl((long double)one - want) <= 1e-12L * want, "the sum of squares, plus what the sum held", n);
    /* libgomp's barriers are invisible to the thread sanitizer, which would report the
     * blocks' sums (tests/CMakeLists.txt): under it, one thread only. */
    const char *sanitizer = getenv("FSDP_SANITIZER");
    int many = !(sanitizer && strcmp(sanitizer, "thread") == 0);
    static const int threads[] = {2, 3, 8};
    for (size_t t = 0; many && t < sizeof threads / sizeof threads[0]; t++)
      check(memcmp(&one, &(double){sum_squares(&cpu, x, n, 0.5, threads[t])}, sizeof one) == 0,
            "the same bits on one thread and on several", n);
    printf("n %zu: %.17g, relative error %.2Lg\n", n, one, fabsl((long double)one - want) / want);
    free(x);
  }
  stream_destroy(cpu.stream);
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
