/* The GPU architectures the cuda kernels are built for, without a GPU (fsdp/cuda_arch.h,
 * src/nn/cuda_arch.c): the table holds every arch CMakeLists.txt builds (its
 * FSDP_CUDA_ARCHS_ALL, given as arguments) and the shared memory a block may have on each,
 * as NVIDIA gives it; and on every arch, every configuration the attention launchers can
 * choose fits: each kernel (forward, the key pass, the dq pass), each dtype, every head dim
 * they take (1 to 128), on tensor cores where those take the heads and on CUDA cores
 * (fp32, other head dims, and 16-bit heads whose rows are not on 16 bytes), with the sizes
 * the launchers themselves compute (cuda_attention_smem). The review of 2026-11-28 (item 4)
 * found the fp32 backward at head dim 128 asking for 165,888 bytes, over the 99 KiB of
 * sm_86, sm_89 and sm_120: here it takes a smaller tiling there, and the whole tiles still
 * on the H100's sm_90, the tiling its kernels ran in (2026-11-26).
 * Usage: cuda_arch_test [ARCH...] (80 86 ...: CMake's list) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/cuda_arch.h"

static const enum dtype DTYPES[] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};

/* The table: ordered, named by capability, and every arch CMake builds in it and back. */
static void test_table(int argc, char **argv) {
  EXPECT(CUDA_N_ARCHS == argc, "%d archs in the table, %d in CMakeLists.txt's FSDP_CUDA_ARCHS_ALL", CUDA_N_ARCHS,
         argc);
  for (int i = 0; i < CUDA_N_ARCHS; i++) {
    const struct cuda_arch *a = &CUDA_ARCHS[i];
    char name[16];
    snprintf(name, sizeof name, "sm_%d%d", a->major, a->minor);
    EXPECT(strcmp(name, a->name) == 0, "%s is capability %d.%d", a->name, a->major, a->minor);
    EXPECT(cuda_arch_find(a->name) == a && cuda_arch_of(a->major, a->minor) == a, "%s not found by name or capability",
           a->name);
    EXPECT(a->smem_optin >= 48 * 1024 && a->smem_optin % 1024 == 0, "%s: %zu bytes", a->name, a->smem_optin);
    if (i > 0)
      EXPECT(a->major * 10 + a->minor > CUDA_ARCHS[i - 1].major * 10 + CUDA_ARCHS[i - 1].minor, "%s after %s",
             a->name, CUDA_ARCHS[i - 1].name);
  }
  for (int i = 0; i < argc; i++) {
    char name[16];
    snprintf(name, sizeof name, "sm_%s", argv[i]);
    EXPECT(cuda_arch_find(name), "CMakeLists.txt builds %s, which the table lacks", name);
  }
  EXPECT(cuda_arch_find(CUDA_ARCH_DEFAULT), "the plan's default %s is not in the table", CUDA_ARCH_DEFAULT);
  EXPECT(!cuda_arch_find("sm_75") && !cuda_arch_find("86") && !cuda_arch_find(""), "a name not in the table found");
  EXPECT(strcmp(cuda_arch_names(), "sm_80, sm_86, sm_89, sm_90, sm_100, sm_120") == 0, "names: %s",
         cuda_arch_names());
}

/* The per-block limits, as NVIDIA's CUDA 13 cuda_occupancy.h (per SM, less the 1 KiB a
 * block's reserve) and CUTLASS give them: 163, 99, 99, 227, 227, 99 KiB. */
static void test_limits(void) {
  static const struct {
    const char *name;
    size_t bytes;
  } LIMITS[] = {{"sm_80", 166912}, {"sm_86", 101376}, {"sm_89", 101376},
                {"sm_90", 232448}, {"sm_100", 232448}, {"sm_120", 101376}};
  for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++) {
    const struct cuda_arch *a = cuda_arch_find(LIMITS[i].name);
    EXPECT(a && a->smem_optin == LIMITS[i].bytes, "%s: %zu bytes, want %zu", LIMITS[i].name, a ? a->smem_optin : 0,
           LIMITS[i].bytes);
  }
}

/* The sizes of the kernels as they were (whole tiles), and of the review's case. */
static void test_sizes(void) {
  EXPECT(cuda_attention_smem(CUDA_ATTENTION_BACKWARD_KV, 0, 128, 64) == 165888, "%zu",
         cuda_attention_smem(CUDA_ATTENTION_BACKWARD_KV, 0, 128, 64));
  EXPECT(cuda_attention_smem(CUDA_ATTENTION_FORWARD, 0, 128, 64) == 115712, "%zu",
         cuda_attention_smem(CUDA_ATTENTION_FORWARD, 0, 128, 64));
  EXPECT(cuda_attention_smem(CUDA_ATTENTION_FORWARD, 1, 128, 64) == 52224, "%zu",
         cuda_attention_smem(CUDA_ATTENTION_FORWARD, 1, 128, 64));
  EXPECT(cuda_attention_smem(CUDA_ATTENTION_BACKWARD_KV, 1, 128, 64) == 70144, "%zu",
         cuda_attention_smem(CUDA_ATTENTION_BACKWARD_KV, 1, 128, 64));
  EXPECT(cuda_attention_smem(CUDA_ATTENTION_BACKWARD_Q, 1, 64, 64) == 37376, "%zu",
         cuda_attention_smem(CUDA_ATTENTION_BACKWARD_Q, 1, 64, 64));
  EXPECT(cuda_attention_tensor_cores(DTYPE_BF16, 64) && cuda_attention_tensor_cores(DTYPE_F16, 128) &&
             !cuda_attention_tensor_cores(DTYPE_F32, 64) && !cuda_attention_tensor_cores(DTYPE_BF16, 96),
         "tensor cores take bf16 and fp16 at head dims 64 and 128 only");
}

/* Every configuration on every arch fits, with the most rows that fit; prints the fp32
 * cases at 64 and 128 and any arch where a kernel takes fewer rows than a whole tile. */
static void test_every_configuration(void) {
  for (int i = 0; i < CUDA_N_ARCHS; i++) {
    const struct cuda_arch *a = &CUDA_ARCHS[i];
    for (size_t di = 0; di < sizeof DTYPES / sizeof DTYPES[0]; di++)
      for (int hd = 1; hd <= CUDA_ATTENTION_HD_MAX; hd++)
        for (int tc = 0; tc <= cuda_attention_tensor_cores(DTYPES[di], hd); tc++)
          for (int k = CUDA_ATTENTION_FORWARD; k <= CUDA_ATTENTION_BACKWARD_Q; k++) {
            enum cuda_attention_kernel kernel = (enum cuda_attention_kernel)k;
            struct cuda_attention_tiling t = cuda_attention_tiling(kernel, tc, hd, a->smem_optin);
            char what[160];
            snprintf(what, sizeof what, "%s, %s, head dim %d, %s, %s", a->name, dtype_name(DTYPES[di]), hd,
                     tc ? "tensor cores" : "CUDA cores", cuda_attention_kernel_name(kernel));
            check_context = what;
            EXPECT(t.rows == 64 || t.rows == 32 || t.rows == 16, "rows %d", t.rows);
            EXPECT(t.rows == 64 || !tc, "tensor cores in %d rows", t.rows);
            EXPECT(t.smem == cuda_attention_smem(kernel, tc, hd, t.rows) && t.smem <= a->smem_optin,
                   "%zu bytes of %zu", t.smem, a->smem_optin);
            EXPECT(t.rows == 64 || cuda_attention_smem(kernel, tc, hd, 2 * t.rows) > a->smem_optin,
                   "%d rows, when %d fit", t.rows, 2 * t.rows);
            if (a->smem_optin >= 163 * 1024) EXPECT(t.rows == 64, "%d rows on an arch with room for whole tiles", t.rows);
            check_context = NULL;
            if (DTYPES[di] == DTYPE_F32 && (hd == 64 || hd == 128))
              printf("%-7s fp32 head dim %3d %-18s %2d rows, %6zu of %6zu bytes\n", a->name, hd,
                     cuda_attention_kernel_name(kernel), t.rows, t.smem, a->smem_optin);
          }
  }
  /* The review's case on the 99 KiB archs: fewer rows, within the limit. */
  const char *small[] = {"sm_86", "sm_89", "sm_120"};
  for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
    const struct cuda_arch *a = cuda_arch_find(small[i]);
    struct cuda_attention_tiling kv = cuda_attention_tiling(CUDA_ATTENTION_BACKWARD_KV, 0, 128, a->smem_optin);
    EXPECT(kv.rows == 16 && kv.smem == 91008, "%s: fp32 key pass at head dim 128: %d rows, %zu bytes", a->name,
           kv.rows, kv.smem);
    struct cuda_attention_tiling f = cuda_attention_tiling(CUDA_ATTENTION_FORWARD, 0, 64, a->smem_optin);
    EXPECT(f.rows == 64, "%s: fp32 forward at head dim 64: %d rows", a->name, f.rows);
  }
  /* No room at all: none. */
  EXPECT(cuda_attention_tiling(CUDA_ATTENTION_BACKWARD_KV, 0, 128, 48 * 1024).rows == 0, "a tiling in 48 KiB");
}

int main(int argc, char **argv) {
  test_table(argc - 1, argv + 1);
  test_limits();
  test_sizes();
  test_every_configuration();
  return check_summary("cuda_arch_test");
}
