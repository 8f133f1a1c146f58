#include <omp.h>

#include "fsdp/nn.h"

int nn_num_threads(void) { return omp_get_max_threads(); }
