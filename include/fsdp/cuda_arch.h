/* The GPU architectures the cuda kernels are built for, what each lets a block of threads
 * have, and the shared memory each configuration of the tiled attention takes: one table
 * for the launchers (src/nn/cuda, which choose a tiling by the device's own limit at run
 * time), `fsdp plan --device cuda` (which names the arch it plans for) and a CPU test
 * (tests/cuda_arch_test.c, which walks every arch and every configuration the launchers
 * can choose). Plain C: built into every fsdp, with or without CUDA. */
#ifndef FSDP_CUDA_ARCH_H
#define FSDP_CUDA_ARCH_H

#include <stddef.h>

#include "fsdp/dtype.h"

/* An architecture nvcc builds the kernels for (CMakeLists.txt's FSDP_CUDA_ARCHS_ALL). */
struct cuda_arch {
  const char *name;  /* "sm_86" */
  int major, minor;  /* its compute capability, 8.6 */
  size_t smem_optin; /* the shared memory a block may ask for (cudaDevAttrMaxSharedMemoryPerBlockOptin) */
  const char *gpus;  /* some GPUs of it, for messages */
};

/* Oldest first. */
extern const struct cuda_arch CUDA_ARCHS[];
extern const int CUDA_N_ARCHS;

/* What `fsdp plan --device cuda` plans for where there is no GPU and no --cuda-arch: the
 * H100's and H200's, the only arch built before the table (and where the kernels ran). */
#define CUDA_ARCH_DEFAULT "sm_90"

/* The arch named ("sm_86"), or NULL for one not in the table. */
const struct cuda_arch *cuda_arch_find(const char *name);
/* The arch of compute capability major.minor, or NULL where the table has none. */
const struct cuda_arch *cuda_arch_of(int major, int minor);
/* "sm_80, sm_86, ...": the table's names, for messages. */
const char *cuda_arch_names(void);

/* ---- The tiled attention's shared memory (src/nn/cuda/flash_attention*.cu) ---- */

/* The largest head dimension the kernels take. */
enum { CUDA_ATTENTION_HD_MAX = 128 };

/* Rows of a query tile and of a key tile (../src/nn/cpu/attention.h's ATTENTION_TILE). A
 * CUDA-core kernel holds the other side's tile (keys in the forward and the dq pass,
 * queries in the key pass) CUDA_ATTENTION_TILE, 32 or 16 rows at a time: the same sums in
 * the same order, so the same bits, in less shared memory. */
enum { CUDA_ATTENTION_TILE = 64, CUDA_ATTENTION_MIN_ROWS = 16 };

enum cuda_attention_kernel {
  CUDA_ATTENTION_FORWARD,     /* out and lse, a block per query tile */
  CUDA_ATTENTION_BACKWARD_KV, /* dk and dv, a block per key tile */
  CUDA_ATTENTION_BACKWARD_Q,  /* dq, a block per query tile */
};
const char *cuda_attention_kernel_name(enum cuda_attention_kernel k); /* "forward", "backward (dk, dv)", ... */

/* 1 where the tensor-core kernels (flash_attention_tc.cu) take heads of dtype d and head
 * dim hd: bf16 and fp16 at 64 and 128 (the launcher also needs every row on 16 bytes, or
 * it takes the CUDA-core kernels); 0 where the CUDA-core ones (flash_attention.cu) do. */
int cuda_attention_tensor_cores(enum dtype d, int hd);

/* Dynamic shared memory a block of kernel k takes at head dim hd: on tensor cores (rows
 * is CUDA_ATTENTION_TILE), or on CUDA cores holding the other side's tile rows at a time.
 * The kernels carve it in the order these sums list their terms. */
size_t cuda_attention_smem(enum cuda_attention_kernel k, int tensor_cores, int hd, int rows);

struct cuda_attention_tiling {
  int rows;    /* of the other side's tile at a time: 64, 32 or 16; 0: none fits */
  size_t smem; /* bytes of dynamic shared memory a block takes */
};
/* The tiling kernel k runs in at head dim hd on a device whose blocks may have smem_limit
 * bytes: the most rows that fit (the tensor-core kernels: 64 or none). */
struct cuda_attention_tiling cuda_attention_tiling(enum cuda_attention_kernel k, int tensor_cores, int hd,
                                                   size_t smem_limit);

#endif
