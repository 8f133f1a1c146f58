/* The peak a run's FLOPs are measured against (mfu.h): a GPU's datasheet figure, or the
 * CPU's product rate, probed once and cached per machine; the CPU's memory bandwidth,
 * which plans time streaming ops with, the same way. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/timer.h"
#include "mfu.h"

/* ---- a GPU's peak: its datasheet's ---- */

/* Dense bf16 tensor-core peaks with fp32 sums (no sparsity: where a datasheet gives only the
 * sparse figure, half of it), by a part of the product name cudaGetDeviceProperties reports
 * ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 5090"). A part
 * matches as whole words (so "A10" is not the A100's, nor the A10G's, a card no NVIDIA
 * datasheet gives figures for; nor "L40" the L40S's), and the first match counts: the
 * more specific names first. A figure 0 is a card we know but have no checked peak for.
 * Sources: NVIDIA's datasheets, each figure found again (2026-11-29) in a copy of the
 * datasheet's table through the project's search tool, but for those marked "unconfirmed":
 * taken from NVIDIA's datasheet or whitepaper as we know it, its table not found again. */
static const struct {
  const char *part;
  double gflops;
} GPU_PEAKS[] = {
    /* Ampere. A100 datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity), SXM and PCIe
     * alike. A10 datasheet: BF16 Tensor Core 125 TFLOPS (250 sparse), unconfirmed. A40
     * datasheet: peak BF16 Tensor TFLOPS with FP32 accumulate 149.7 (299.4 sparse). */
    {"A100", 312e3},
    {"A10", 125e3},
    {"A40", 149.7e3},
    /* Ada. L4 datasheet: BF16 Tensor Core 242 TFLOPS with sparsity. L40 and L40S datasheets:
     * BFLOAT16 Tensor Core 181.05 and 362.05 TFLOPS (362.1 and 733 sparse). RTX 6000 Ada
     * datasheet: 1,457 TFLOPS FP8 with sparsity, a quarter of which is its dense bf16 with
     * fp32 sums (the Ada whitepaper's 364.2), unconfirmed. */
    {"L4", 121e3},
    {"L40", 181.05e3},
    {"L40S", 362.05e3},
    {"RTX 6000 Ada", 364.2e3},
    /* Hopper. H100 datasheet: BF16 Tensor Core 1,979 (SXM) and 1,513 (PCIe) TFLOPS with
     * sparsity, 1,671 (NVL, unconfirmed). H200: the H100 SXM's compute, 1,979 (SXM); its NVL
     * 1,671, unconfirmed. GH200 datasheet: 1,979, its GPU the H100 SXM's, unconfirmed. */
    {"H100 PCIe", 756e3},
    {"H100 NVL", 835e3},
    {"H100", 989e3},
    {"H200 NVL", 835e3},
    {"H200", 989e3},
    {"GH200", 989e3},
    /* Blackwell. HGX B200 and GB200 NVL72 datasheets, one GPU's FP16/BF16 Tensor Core: 4.5 and
     * 5 PFLOPS with sparsity. RTX PRO 6000 Blackwell: 4,000 AI TOPS (FP4, sparse) on its
     * datasheet, so 500 TFLOPS of dense bf16 with fp32 sums (a workstation card sums in fp32
     * at full rate); 503.8 from its clocks (unconfirmed against NVIDIA's whitepaper). Its
     * Max-Q Workstation Edition runs lower clocks: no figure found. GeForce RTX 5090: 838.4
     * TFLOPS FP16 with sparsity, with fp16 sums; a GeForce card sums 16-bit products in fp32
     * at half that rate: 209.5 dense (the RTX Blackwell whitepaper's figure, unconfirmed). */
    {"B200", 2250e3},
    {"GB200", 2500e3},
    {"RTX PRO 6000 Blackwell Max-Q", 0.0},
    {"RTX PRO 6000 Blackwell", 503.8e3},
    {"GeForce RTX 5090", 209.5e3},
};

/* 1 where part is in model as whole words: at its start or after a space, and at its end or
 * before a space or a dash. */
static int has_words(const char *model, const char *part) {
  size_t n = strlen(part);
  for (const char *at = strstr(model, part); at; at = strstr(at + 1, part)) {
    char after = at[n];
    if ((at == model || at[-1] == ' ') && (after == '\0' || after == ' ' || after == '-')) return 1;
  }
  return 0;
}

double peak_gpu_gflops(const char *model) {
  for (size_t i = 0; i < sizeof GPU_PEAKS / sizeof GPU_PEAKS[0]; i++)
    if (has_words(model, GPU_PEAKS[i].part)) return GPU_PEAKS[i].gflops;
  return 0.0;
}

/* ---- the probe ---- */

/* The product a GPT-2 block's MLP runs at 2048 tokens and width 512, 4.3 GFLOP: large
 * enough for oneDNN's kernels to run at their rate on a few cores, short enough to
 * repeat (a few ms each). */
enum { PROBE_M = 2048, PROBE_K = 512, PROBE_N = 2048, PROBE_MIN_RUNS = 5 };
static const double PROBE_MS = 250.0;
/* Other jobs' runnable tasks under which a probe is cached: at most half a core busy. */
static const double QUIET_LOAD = 0.5;

/* The fastest of a quarter second of runs of the run's own product (the dtype it computes
 * in, on the path its products take on this CPU): on shared cores the others are the load's. */
static double probe_gflops(enum dtype d) {
  struct device *cpu = device_cpu();
  struct stream *host = device_host_stream_create(cpu, "peak probe");
  struct nn_ctx k = {cpu, host};
  size_t in = (size_t)PROBE_M * PROBE_K, w = (size_t)PROBE_N * PROBE_K, out = (size_t)PROBE_M * PROBE_N;
  size_t e = dtype_size(d);
  unsigned char *buf = fsdp_xmalloc((in + w + out) * e);
  float *values = fsdp_xmalloc((in + w) * sizeof *values);
  for (size_t i = 0; i < in + w; i++) values[i] = (float)(i % 13) / 13.0f - 0.5f;
  if (d == DTYPE_F32)
    memcpy(buf, values, (in + w) * e);
  else
    dtype_pack(d, values, (uint16_t *)buf, in + w);
  free(values);
  struct tensor x = tensor_2d(buf, d, PROBE_M, PROBE_K);
  struct tensor wt = tensor_2d(buf + in * e, d, PROBE_N, PROBE_K);
  struct tensor y = tensor_2d(buf + (in + w) * e, d, PROBE_M, PROBE_N);
  nn_matmul_forward(&k, y, x, wt, TENSOR_NONE); /* creates the primitive */
  double best = 1e300, start = time_now_ms();
  for (int run = 0; run < PROBE_MIN_RUNS || time_now_ms() - start < PROBE_MS; run++) {
    double t0 = time_now_ms();
    nn_matmul_forward(&k, y, x, wt, TENSOR_NONE);
    double ms = time_now_ms() - t0;
    if (ms < best) best = ms;
  }
  free(buf);
  stream_destroy(host);
  return 2.0 * PROBE_M * PROBE_K * PROBE_N / (best * 1e6);
}

/* ---- the cache: lines "GFLOPS KEY" ---- */

/* aarch64's cores by their MIDR's implementer and part, as lscpu names them: the servers'
 * (Graviton 2 to 4, Grace, Altra, AmpereOne, Kunpeng, A64FX) and a few boards'. */
static const struct {
  unsigned implementer, part;
  const char *name;
} ARM_PARTS[] = {
    {0x41, 0xd08, "ARM Cortex-A72"},        {0x41, 0xd0b, "ARM Cortex-A76"},  {0x41, 0xd0c, "ARM Neoverse-N1"},
    {0x41, 0xd40, "ARM Neoverse-V1"},       {0x41, 0xd49, "ARM Neoverse-N2"}, {0x41, 0xd4f, "ARM Neoverse-V2"},
    {0x41, 0xd84, "ARM Neoverse-V3"},       {0x41, 0xd8e, "ARM Neoverse-N3"}, {0x46, 0x001, "Fujitsu A64FX"},
    {0x48, 0xd01, "HiSilicon Kunpeng-920"}, {0xc0, 0xac3, "Ampere Ampere-1"}, {0xc0, 0xac4, "Ampere Ampere-1a"},
};

void peak_cpu_name_from_cpuinfo(const char *cpuinfo, char *out, size_t size) {
  unsigned implementer = 0, part = 0;
  int have_implementer = 0, have_part = 0;
  char model[128] = "";
  for (const char *line = cpuinfo; *line && !(have_implementer && have_part);) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char text[256];
    snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), line);
    const char *colon = strchr(text, ':');
    if (!have_implementer && sscanf(text, "CPU implementer : %x", &implementer) == 1) have_implementer = 1;
    if (!have_part && sscanf(text, "CPU part : %x", &part) == 1) have_part = 1;
    if (!model[0] && colon && strncmp(text, "model name", 10) == 0) {
      const char *v = colon + 1;
      while (*v == ' ' || *v == '\t') v++;
      snprintf(model, sizeof model, "%s", v);
    }
    line = end ? end + 1 : line + len;
  }
  snprintf(out, size, "unknown");
  if (have_implementer && have_part) {
    for (size_t i = 0; i < sizeof ARM_PARTS / sizeof ARM_PARTS[0]; i++)
      if (ARM_PARTS[i].implementer == implementer && ARM_PARTS[i].part == part) {
        snprintf(out, size, "%s", ARM_PARTS[i].name);
        return;
      }
    snprintf(out, size, "aarch64 implementer 0x%02x part 0x%03x", implementer, part);
  } else if (model[0]) {
    snprintf(out, size, "%s", model);
  }
}

/* The processor's brand string (cpuid) on x86-64, its name from /proc/cpuinfo elsewhere:
 * the machine's part of the key. */
static void cpu_model(char *out, size_t size) {
  snprintf(out, size, "unknown");
#if !defined(__x86_64__) && !defined(__i386__)
  /* The first processor's lines come first: the file's first 64 KiB hold them. */
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char *text = fsdp_xmalloc(65536);
  size_t n = fread(text, 1, 65535, f);
  text[n] = '\0';
  fclose(f);
  peak_cpu_name_from_cpuinfo(text, out, size);
  free(text);
#else
  unsigned regs[12];
  unsigned max_leaf = __get_cpuid_max(0x80000000u, NULL); /* int in clang's cpuid.h, unsigned in gcc's */
  if (max_leaf < 0x80000004u) return;
  for (unsigned i = 0; i < 3; i++)
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  char brand[sizeof regs + 1];
  memcpy(brand, regs, sizeof regs);
  brand[sizeof regs] = '\0';
  const char *b = brand;
  while (*b == ' ') b++;
  if (*b) snprintf(out, size, "%s", b);
#endif
}

/* The product's dtype, the instructions and engines it runs on (FSDP_SIMD and
 * DNNL_MAX_CPU_ISA change them; a build may change the engines), the machine, its threads
 * and ranks. */
static void cache_key(char *out, size_t size, enum dtype d, int world_size) {
  char model[64], isa[64], engines[160];
  cpu_model(model, sizeof model);
  nn_cpu_isa(isa, sizeof isa);
  nn_cpu_engines(d, engines, sizeof engines);
  snprintf(out, size, "%s-matmul-%dx%dx%d isa=\"%s\" engines=\"%s\" cpu=\"%s\" cpus=%ld threads=%d ranks=%d",
           dtype_name(d), PROBE_M, PROBE_K, PROBE_N, isa, engines, model, sysconf(_SC_NPROCESSORS_ONLN),
           nn_num_threads(), world_size);
}

static char *copy(const char *text) {
  size_t n = strlen(text) + 1;
  return memcpy(fsdp_xmalloc(n), text, n);
}

/* $XDG_CACHE_HOME/fsdp.c/peak-gflops.txt, else under ~/.cache; NULL without either variable. */
static char *cache_path(void) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char path[4096];
  if (xdg && *xdg)
    snprintf(path, sizeof path, "%s/fsdp.c/peak-gflops.txt", xdg);
  else if (home && *home)
    snprintf(path, sizeof path, "%s/.cache/fsdp.c/peak-gflops.txt", home);
  else
    return NULL;
  return copy(path);
}

/* The file's text, "" when there is none or it cannot be read. */
static char *cache_read(const char *path) {
  struct input_file f;
  char why[128];
  if (input_file_try_open(&f, path, why, sizeof why) != 0) return copy("");
  size_t length;
  char *text = input_file_read_whole(&f, "peak cache", 1 << 20, &length);
  input_file_close(&f);
  return text;
}

/* The line's GFLOP/s when it is key's (line: len bytes, its newline left out), else 0. */
static double line_value(const char *line, size_t len, const char *key) {
  char number[32];
  const char *space = memchr(line, ' ', len);
  size_t digits = space ? (size_t)(space - line) : 0, rest = len - digits - (space ? 1 : 0);
  if (!space || digits >= sizeof number || rest != strlen(key) || memcmp(space + 1, key, rest) != 0) return 0.0;
  memcpy(number, line, digits);
  number[digits] = '\0';
  char *end;
  double gflops = strtod(number, &end);
  return *end == '\0' && gflops > 0.0 ? gflops : 0.0;
}

/* Where the line after the one at `at` starts; *len: that line's bytes, its newline left out. */
static size_t next_line(const char *text, size_t at, size_t *len) {
  const char *end = strchr(text + at, '\n');
  *len = end ? (size_t)(end - (text + at)) : strlen(text + at);
  return at + *len + (end ? 1 : 0);
}

static double cache_lookup(const char *text, const char *key) {
  double gflops = 0.0;
  for (size_t at = 0, len, next; text[at] && gflops == 0.0; at = next) {
    next = next_line(text, at, &len);
    gflops = line_value(text + at, len, key);
  }
  return gflops;
}

/* Makes each missing folder of path's. */
static int make_parents(const char *path) {
  char *p = copy(path);
  int ok = 1;
  for (char *slash = strchr(p + 1, '/'); slash && ok; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    ok = mkdir(p, 0755) == 0 || errno == EEXIST;
    *slash = '/';
  }
  free(p);
  return ok;
}

/* The file again with key's line replaced, under a temporary name then renamed. A
 * failure is said and left at that: the peak was measured, only not kept. */
static void cache_store(const char *path, const char *old, const char *key, double gflops) {
  size_t cap = strlen(old) + strlen(key) + 64, n = 0;
  char *text = fsdp_xmalloc(cap);
  for (size_t at = 0, len, next; old[at]; at = next) {
    next = next_line(old, at, &len);
    if (line_value(old + at, len, key) > 0.0) continue;
    memcpy(text + n, old + at, len);
    n += len;
    text[n++] = '\n';
  }
  n += (size_t)snprintf(text + n, cap - n, "%.1f %s\n", gflops, key);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = make_parents(path) ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
  int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
  if (fd >= 0) ok = close(fd) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) {
    fsdp_log_info("peak: not cached, cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
  free(text);
}

/* Says where a probe's value v came from, and keeps one just measured on quiet cores in
 * the cache: a probe on busy cores reads low, and a cached value would stay low. */
static void report_probe(const char *what, const char *value, const char *key, const char *path, const char *text,
                         int cached, double others, double v) {
  if (cached) {
    fsdp_log_info("%s: %s (%s), cached in %s", what, value, key, path);
    return;
  }
  int quiet = others < QUIET_LOAD;
  fsdp_log_info("%s: %s (%s), measured now%s (other jobs' load %.1f)", what, value, key,
                quiet ? "" : ", not cached: the cores are busy", others);
  if (quiet && path) cache_store(path, text, key, v);
}

/* Other jobs' runnable tasks: the 1-minute load average, which this job's ranks, started
 * a moment ago, have hardly moved yet (0 when unknown). */
static double other_load(void) {
  struct sysinfo info;
  if (sysinfo(&info) != 0) return 0.0;
  return (double)info.loads[0] / (double)(1u << SI_LOAD_SHIFT);
}

double peak_gflops(float given, enum dtype param_dtype, struct device *device, struct comm_group *group) {
  int rank = comm_rank(group), W = comm_size(group);
  if (given > 0.0f) {
    if (rank == 0) fsdp_log_info("peak: %.0f GFLOP/s a rank (--peak-gflops)", given);
    return rank == 0 ? given : 0.0;
  }
  if (device != device_cpu()) {
    char model[256];
    device_model(device, model, sizeof model);
    double gflops = peak_gpu_gflops(model);
    if (rank == 0 && gflops > 0.0)
      fsdp_log_info("peak: %.0f TFLOP/s a rank (%s %s, dense bf16)", gflops / 1e3, device_name(device), model);
    else if (rank == 0)
      fsdp_log_info("peak: unknown on %s %s (--peak-gflops for the MFU)", device_name(device), model);
    return rank == 0 ? gflops : 0.0;
  }
  enum dtype d = nn_compute_dtype(device, param_dtype);
  char key[512];
  cache_key(key, sizeof key, d, W);
  char *path = rank == 0 ? cache_path() : NULL, *text = path ? cache_read(path) : copy("");
  double cached = cache_lookup(text, key);
  comm_broadcast(group, &cached, sizeof cached, 0);
  double gflops = cached, others = other_load();
  if (cached == 0.0) {
    gflops = probe_gflops(d);
    comm_barrier(group); /* no rank goes on to heavier work while another still probes */
  }
  if (rank == 0) {
    char value[64];
    snprintf(value, sizeof value, "%.0f GFLOP/s a rank", gflops);
    report_probe("peak", value, key, path, text, cached > 0.0, others, gflops);
  }
  free(path);
  free(text);
  return rank == 0 ? gflops : 0.0;
}

/* ---- the CPU's memory bandwidth: probed once and cached as the peak is ---- */

enum { BANDWIDTH_N = 1 << 24, BANDWIDTH_RUNS = 5 };

/* The best of a few passes of y += x over two arrays of 64 MiB: 12 bytes an element. */
static double probe_memory_gbytes_per_s(void) {
  struct device *cpu = device_cpu();
  struct stream *host = device_host_stream_create(cpu, "bandwidth probe");
  struct nn_ctx k = {cpu, host};
  float *buf = fsdp_xcalloc(2 * (size_t)BANDWIDTH_N, sizeof *buf);
  struct tensor y = tensor_1d(buf, DTYPE_F32, BANDWIDTH_N), x = tensor_1d(buf + BANDWIDTH_N, DTYPE_F32, BANDWIDTH_N);
  nn_add(&k, y, x);
  double best = INFINITY;
  for (int run = 0; run < BANDWIDTH_RUNS; run++) {
    double t0 = time_now_ms();
    nn_add(&k, y, x);
    double ms = time_now_ms() - t0;
    if (ms < best) best = ms;
  }
  free(buf);
  stream_destroy(host);
  return 12.0 * BANDWIDTH_N / (best * 1e-3) / 1e9;
}

double peak_memory_bytes_per_s(void) {
  char model[64], isa[64], key[256];
  cpu_model(model, sizeof model);
  nn_cpu_isa(isa, sizeof isa);
  snprintf(key, sizeof key, "GB/s fp32-add-2x64MiB isa=\"%s\" cpu=\"%s\" cpus=%ld threads=%d", isa, model,
           sysconf(_SC_NPROCESSORS_ONLN), nn_num_threads());
  char *path = cache_path(), *text = path ? cache_read(path) : copy("");
  double cached = cache_lookup(text, key), others = other_load();
  double gbytes = cached > 0.0 ? cached : probe_memory_gbytes_per_s();
  char value[64];
  snprintf(value, sizeof value, "%.1f GB/s", gbytes);
  report_probe("memory", value, key, path, text, cached > 0.0, others, gbytes);
  free(path);
  free(text);
  return gbytes * 1e9;
}
