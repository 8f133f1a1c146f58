/* The peaks the MFU is measured against (src/train/peak.c): a GPU's by its name, and
 * aarch64's CPU names in the CPU probe's cache key. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "mfu.h"

/* A GPU's peak by the names cudaGetDeviceProperties gives (src/train/peak.c): the PCIe and
 * NVL H100 are not taken for the SXM one, an A100 for an A10, an L40S for an L40, a GB200
 * for a B200 nor a GH200 for an H200; a card the table lacks (the A10G, GeForce cards but
 * the 5090) or has no figure for (the RTX PRO 6000 Blackwell Max-Q) has none. */
static void test_gpu_peaks(void) {
  static const struct {
    const char *model;
    double gflops;
  } cards[] = {
      {"NVIDIA A100-SXM4-80GB", 312e3},
      {"NVIDIA A100 80GB PCIe", 312e3},
      {"NVIDIA A100-PCIE-40GB", 312e3},
      {"NVIDIA A10", 125e3},
      {"NVIDIA A10G", 0.0},
      {"NVIDIA A40", 149.7e3},
      {"NVIDIA L4", 121e3},
      {"NVIDIA L40", 181.05e3},
      {"NVIDIA L40S", 362.05e3},
      {"NVIDIA RTX 6000 Ada Generation", 364.2e3},
      {"NVIDIA H100 80GB HBM3", 989e3},
      {"NVIDIA H100 PCIe", 756e3},
      {"NVIDIA H100 NVL", 835e3},
      {"NVIDIA H200", 989e3},
      {"NVIDIA H200 NVL", 835e3},
      {"NVIDIA GH200 480GB", 989e3},
      {"NVIDIA B200", 2250e3},
      {"NVIDIA GB200", 2500e3},
      {"NVIDIA GeForce RTX 5090", 209.5e3},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 503.8e3},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 503.8e3},
      {"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 0.0},
      {"NVIDIA GeForce RTX 4090", 0.0},
      {"", 0.0},
  };
  for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
    double got = peak_gpu_gflops(cards[i].model);
    EXPECT(got == cards[i].gflops, "peak of '%s': %g GFLOP/s, want %g", cards[i].model, got, cards[i].gflops);
  }
}

/* aarch64's CPU names for the peak cache's key (src/train/peak.c), from /proc/cpuinfo as
 * Graviton 3, Grace, AmpereOne and an unknown part write it, and where it has a model
 * name only or nothing of either. */
static void test_arm_cpu_names(void) {
  static const struct {
    const char *cpuinfo, *name;
  } cases[] = {
      {"processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n"
       "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n\n"
       "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
       "ARM Neoverse-V1"},
      {"processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n", "ARM Neoverse-V2"},
      {"CPU implementer\t: 0xc0\nCPU part\t: 0xac3", "Ampere Ampere-1"},
      {"CPU implementer\t: 0x4e\nCPU part\t: 0x004\n", "aarch64 implementer 0x4e part 0x004"},
      {"processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu\n",
       "Intel(R) Xeon(R) CPU @ 2.20GHz"},
      {"processor\t: 0\ncpu\t\t: POWER9\n", "unknown"},
      {"", "unknown"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[64];
    peak_cpu_name_from_cpuinfo(cases[i].cpuinfo, name, sizeof name);
    EXPECT(strcmp(name, cases[i].name) == 0, "case %zu: '%s', want '%s'", i, name, cases[i].name);
  }
}

int main(void) {
  test_gpu_peaks();
  test_arm_cpu_names();
  return check_summary("peak_test");
}
