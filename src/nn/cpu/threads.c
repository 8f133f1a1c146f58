#include <omp.h>
#include <stdio.h>

#include "fsdp/nn.h"
#include "fsdp/simd.h"
#include "onednn.h"

int nn_num_threads(void) { return omp_get_max_threads(); }

void nn_cpu_isa(char *out, size_t size) {
  snprintf(out, size, "%s / oneDNN %s", simd_isa_name(simd_isa()), onednn_isa());
}
