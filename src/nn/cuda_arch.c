/* The GPU architectures the kernels are built for and the tiled attention's shared memory
 * (fsdp/cuda_arch.h). Plain C, in every build: fsdp plan and tests/cuda_arch_test.c use it
 * without a GPU, the cuda launchers with one. */
#include "fsdp/cuda_arch.h"

#include <stdio.h>
#include <string.h>

/* The shared memory a block may opt in to, by architecture: what an SM can give to shared
 * memory, less the 1 KiB CUDA reserves in every block (cudaDevAttrReservedSharedMemoryPerBlock).
 * Per SM, the largest carveout of NVIDIA's CUDA 13.0 cuda_occupancy.h
 * (cudaOccSMemPerMultiprocessor's table; the Ampere tuning guide gives 8.0's and 8.6's the
 * same way): 164 KiB on 8.0, 100 KiB on 8.6 and 8.9, 228 KiB on 9.0 and 10.0, 100 KiB on
 * 12.0. Per block, NVIDIA's CUTLASS (the CuTe DSL's SMEM_CAPACITY_MAP: (164 - 1) * 1024 for
 * sm_80, (100 - 1) * 1024 for sm_86, sm_89 and sm_120, (228 - 1) * 1024 for sm_90 and
 * sm_100): 163, 99, 99, 227, 227 and 99 KiB. On a GPU the launchers read the device's own
 * figure (cudaDevAttrMaxSharedMemoryPerBlockOptin); the table is what the plan and the
 * tests assume. */
#define KIB 1024u
const struct cuda_arch CUDA_ARCHS[] = {
    {"sm_80", 8, 0, 163 * KIB, "A100, A30"},
    {"sm_86", 8, 6, 99 * KIB, "A10, A40, RTX A6000, GeForce RTX 30"},
    {"sm_89", 8, 9, 99 * KIB, "L4, L40, L40S, RTX 6000 Ada, GeForce RTX 40"},
    {"sm_90", 9, 0, 227 * KIB, "H100, H200, GH200"},
    {"sm_100", 10, 0, 227 * KIB, "B200, GB200"},
    {"sm_120", 12, 0, 99 * KIB, "GeForce RTX 50, RTX PRO 6000 Blackwell"},
};
const int CUDA_N_ARCHS = (int)(sizeof CUDA_ARCHS / sizeof CUDA_ARCHS[0]);

const struct cuda_arch *cuda_arch_find(const char *name) {
  for (int i = 0; i < CUDA_N_ARCHS; i++)
    if (strcmp(CUDA_ARCHS[i].name, name) == 0) return &CUDA_ARCHS[i];
  return NULL;
}

const struct cuda_arch *cuda_arch_of(int major, int minor) {
  for (int i = 0; i < CUDA_N_ARCHS; i++)
    if (CUDA_ARCHS[i].major == major && CUDA_ARCHS[i].minor == minor) return &CUDA_ARCHS[i];
  return NULL;
}

const char *cuda_arch_names(void) {
  static char names[128];
  if (!names[0])
    for (int i = 0; i < CUDA_N_ARCHS; i++) {
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", CUDA_ARCHS[i].name);
    }
  return names;
}

const char *cuda_attention_kernel_name(enum cuda_attention_kernel k) {
  switch (k) {
    case CUDA_ATTENTION_FORWARD: return "forward";
    case CUDA_ATTENTION_BACKWARD_KV: return "backward (dk, dv)";
    case CUDA_ATTENTION_BACKWARD_Q: return "backward (dq)";
  }
  return "?";
}

int cuda_attention_tensor_cores(enum dtype d, int hd) {
  return (d == DTYPE_BF16 || d == DTYPE_F16) && (hd == 64 || hd == 128);
}

size_t cuda_attention_smem(enum cuda_attention_kernel k, int tensor_cores, int hd, int rows) {
  const size_t T = CUDA_ATTENTION_TILE, F = sizeof(float);
  size_t h = (size_t)hd, r = (size_t)rows;
  if (tensor_cores) {
    /* 16-bit tiles, rows hd + 8 elements apart: q, k, v; or k, v, q, dout and the query
     * rows' D and lse (fp32). */
    size_t tile = T * (h + 8) * 2;
    return k == CUDA_ATTENTION_FORWARD ? 3 * tile : 4 * tile + 2 * T * F;
  }
  /* fp32 tiles, rows hd + 1 floats apart (and the scores' rows one more than their count). */
  switch (k) {
    case CUDA_ATTENTION_FORWARD: /* q (a tile), k and v (rows each), p (a tile's rows x rows) */
      return (T * (h + 1) + 2 * r * (h + 1) + T * (r + 1)) * F;
    case CUDA_ATTENTION_BACKWARD_KV: /* k, v (a tile each), q, dout (rows each), p, ds (rows x a tile), lse, D */
      return (2 * T * (h + 1) + 2 * r * (h + 1) + 2 * r * (T + 1) + 2 * r) * F;
    case CUDA_ATTENTION_BACKWARD_Q: /* k, v (rows each), q, dout (a tile each), ds (a tile's rows x rows) */
      return (2 * r * (h + 1) + 2 * T * (h + 1) + T * (r + 1)) * F;
  }
  return 0;
}

struct cuda_attention_tiling cuda_attention_tiling(enum cuda_attention_kernel k, int tensor_cores, int hd,
                                                   size_t smem_limit) {
  int least = tensor_cores ? CUDA_ATTENTION_TILE : CUDA_ATTENTION_MIN_ROWS;
  for (int rows = CUDA_ATTENTION_TILE; rows >= least; rows /= 2) {
    size_t smem = cuda_attention_smem(k, tensor_cores, hd, rows);
    if (smem <= smem_limit) return (struct cuda_attention_tiling){rows, smem};
  }
  return (struct cuda_attention_tiling){0, cuda_attention_smem(k, tensor_cores, hd, least)};
}
