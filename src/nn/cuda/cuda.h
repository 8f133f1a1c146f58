/* Private to src/nn/cuda: the cuda backend's launchers, which take their op's argument
 * struct (../ops.h) as the CPU kernels do, check it on the host, and enqueue the GPU
 * work (kernels.h) on the op's stream. */
#ifndef FSDP_NN_CUDA_H
#define FSDP_NN_CUDA_H

#include "../ops.h"

void cuda_cast(void *args);
void cuda_round(void *args);
void cuda_add(void *args);
void cuda_scale(void *args);
void cuda_sum(void *args);
void cuda_sum_squares(void *args);
void cuda_fill(void *args);
void cuda_init_normal(void *args);
void cuda_adamw(void *args);

#endif
