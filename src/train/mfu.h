/* Private to src/train: the FLOPs a training step does (mfu.c) and the peak they are
 * measured against (peak.c), for the GFLOP/s and MFU of each step's log line
 * (docs/benchmarks.md, "FLOPs and MFU"). */
#ifndef FSDP_TRAIN_MFU_H
#define FSDP_TRAIN_MFU_H

#include <stddef.h>

#include "fsdp/dtype.h"
#include "fsdp/model.h"

struct comm_group;
struct device;

/* PaLM's 6 N + 12 L C T (nanoGPT's estimate_mfu; bench/gpu_torch.py counts the same): N
 * the parameters that enter a matrix product, all but an untied input embedding of
 * `parameters`; L layers, C the attention's width, T the sequence length. */
double mfu_flops_per_token(const struct model_config *c, int T, size_t parameters);

/* Collective over group: one rank's peak in GFLOP/s, known on rank 0 (0 elsewhere).
 * `given` (--peak-gflops) when positive; else, on the cpu, a short matmul on oneDNN in the
 * run's compute dtype (the products its steps run, on the path they take on this CPU)
 * timed on every rank at once, each rank on its own threads, so that it is what a rank
 * gets while all compute; the result is cached on disk per dtype, instruction set,
 * machine, thread count and world size, and read back by later runs; on cuda the card's
 * dense bf16 peak by its name (peak_gpu_gflops), 0 for a card not in the table: unknown,
 * no MFU. */
double peak_gflops(float given, enum dtype param_dtype, struct device *device, struct comm_group *group);

/* A GPU's dense bf16 tensor-core peak in GFLOP/s (fp32 sums, no sparsity; its datasheet's,
 * src/train/peak.c names each source) by its product name as cudaGetDeviceProperties gives
 * it (device_model): A100 (SXM and PCIe) 312e3, A10 125e3, A40 149.7e3, L4 121e3, L40
 * 181.05e3, L40S 362.05e3, RTX 6000 Ada 364.2e3, H100 PCIe 756e3, H100 NVL and H200 NVL
 * 835e3, H100 SXM, H200 and GH200 989e3, B200 2250e3, GB200 2500e3, GeForce RTX 5090
 * 209.5e3, RTX PRO 6000 Blackwell (Workstation and Server Editions) 503.8e3; 0 for any other
 * (the RTX PRO 6000 Blackwell Max-Q, the A10G and GeForce cards but the 5090 among them):
 * unknown, no MFU. */
double peak_gpu_gflops(const char *model);

/* The CPU's memory bandwidth in bytes/s as its streaming kernels reach it (y += x over two
 * arrays of 64 MiB on this process's threads, the best of 5), cached beside the peak per
 * instruction set, machine and thread count: a plan's times do not move with each probe's
 * noise. A probe on busy cores is not kept. */
double peak_memory_bytes_per_s(void);

/* The CPU's name in the peak cache's key where there is no brand string to read (aarch64),
 * from /proc/cpuinfo's text: the core its first "CPU implementer" and "CPU part" lines
 * name (the MIDR's fields; lscpu's names), else "aarch64 implementer 0x.. part 0x...",
 * else its "model name" line, else "unknown". */
void peak_cpu_name_from_cpuinfo(const char *cpuinfo, char *out, size_t size);

#endif
