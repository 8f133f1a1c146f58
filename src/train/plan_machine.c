/* The machines `fsdp plan` times a step on (train.h, struct plan_machine): GPUs and links
 * by name or by figures, this machine's CPU by a probe, and the efficiencies that turn
 * their peaks into the rates the meta device charges (fsdp/meta_clock.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cores.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/flags.h"
#include "fsdp/meta_clock.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/timer.h"
#include "fsdp/train.h"
#include "mfu.h"

static const struct flag_unit RATE_UNITS[] = {
    {"B/s", 1},          {"kB/s", 1e3},        {"KB/s", 1e3},         {"MB/s", 1e6},       {"GB/s", 1e9},
    {"TB/s", 1e12},      {"KiB/s", 1024.0},    {"MiB/s", 1048576.0},  {"GiB/s", 1073741824.0},
    {"kb/s", 1e3 / 8},   {"Mb/s", 1e6 / 8},    {"Gb/s", 1e9 / 8},     {"Tb/s", 1e12 / 8},  {"kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},
};
static const char RATE_FORM[] = "a rate such as 900GB/s, 25GiB/s or 400Gb/s: B for bytes, b or bit for bits";
static const struct flag_unit TIME_UNITS[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
static const char TIME_FORM[] = "a latency such as 2us, 500ns or 1ms";
static const struct flag_unit SIZE_UNITS[] = {{"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"MiB", 1048576.0},
                                              {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
static const char SIZE_FORM[] = "a size such as 80GiB or 96GB";
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Around any machine's, with room on both sides: beyond them a step's times stop being
 * finite (a subnormal rate's, an overflowing latency's) or are of no machine. */
static const double RATE_MIN = 1e3, RATE_MAX = 1e15, LATENCY_MIN = 1e-9, LATENCY_MAX = 1;

static double rate_figure(const char *flag, const char *spec, const char *text) {
  double v = flag_quantity(flag, text, RATE_UNITS, COUNT(RATE_UNITS), RATE_FORM);
  if (v < RATE_MIN || v > RATE_MAX)
    fsdp_fatal("%s %s: '%s' is outside the rates of a machine, 1kB/s .. 1000TB/s", flag, spec, text);
  return v;
}

static double latency_figure(const char *spec, const char *text) {
  double v = flag_quantity("--link", text, TIME_UNITS, COUNT(TIME_UNITS), TIME_FORM);
  if (v < LATENCY_MIN || v > LATENCY_MAX)
    fsdp_fatal("--link %s: '%s' is outside the latencies of a link, 1ns .. 1s", spec, text);
  return v;
}

/* Line rates, one way, of one GPU's (one rank's) share, and a ring step's latency. */
static const struct link_preset {
  const char *name;
  double gbytes_per_s, latency_us;
  const char *what;
} LINKS[] = {
    {"nvlink3", 300, 3, "NVLink 3 (A100): 12 links, 300 GB/s each way"},
    {"nvlink4", 450, 3, "NVLink 4 (H100, H200): 18 links, 450 GB/s each way"},
    {"nvlink5", 900, 3, "NVLink 5 (B200): 18 links, 900 GB/s each way"},
    {"pcie4", 32, 5, "PCIe 4.0 x16"},
    {"pcie5", 64, 5, "PCIe 5.0 x16"},
    {"ib-hdr200", 25, 5, "InfiniBand HDR, 200 Gb/s a GPU"},
    {"ib-ndr400", 50, 5, "InfiniBand NDR, 400 Gb/s a GPU"},
    {"roce-200", 25, 8, "RoCE, 200 Gb/s a GPU"},
    {"roce-400", 50, 8, "RoCE, 400 Gb/s a GPU"},
    {"ethernet-25g", 3.125, 30, "25 Gb/s Ethernet through TCP"},
    {"ethernet-100g", 12.5, 20, "100 Gb/s Ethernet through TCP"},
    {"loopback", 8, 2, "the processes of one machine through shared memory (Open MPI's)"},
};

/* Datasheet figures: the dense bf16 peak is peak.c's, by the product name `part`; HBM's
 * bandwidth and the memory a process can have (MiB as nvidia-smi shows them: the H100's
 * and the H200's read on this project's runs, docs/benchmarks.md). And the share of the
 * peaks the vendor's libraries reach there (docs/architecture.md, "Step time"): cuBLAS's
 * GEMMs at a transformer's shapes, and FlashAttention-2's causal kernels, which PyTorch's
 * SDPA runs: 50-73% of an A100's peak (the FlashAttention-2 paper), 35% of an H100's (the
 * FlashAttention-3 paper). */
static const struct gpu_preset {
  const char *name, *part;
  double hbm_gbytes_per_s, memory_mib, host_gbytes_per_s;
  const char *intra, *inter;
  double matmul, attention;
} GPUS[] = {
    {"a100-sxm", "A100", 2039, 81920, 25, "nvlink3", "ib-hdr200", 0.75, 0.50},
    {"a100-pcie", "A100", 1935, 81920, 25, "pcie4", "ib-hdr200", 0.75, 0.50},
    {"h100-sxm", "H100", 3350, 81559, 50, "nvlink4", "ib-ndr400", 0.60, 0.35},
    {"h100-pcie", "H100 PCIe", 2000, 81559, 50, "pcie5", "ib-ndr400", 0.60, 0.35},
    {"h100-nvl", "H100 NVL", 3900, 95830, 50, "nvlink4", "ib-ndr400", 0.60, 0.35},
    {"h200", "H200", 4800, 143771, 50, "nvlink4", "ib-ndr400", 0.60, 0.35},
    {"b200", "B200", 8000, 183359, 50, "nvlink5", "ib-ndr400", 0.60, 0.35},
    {"l40s", "L40S", 864, 46068, 25, "pcie4", "roce-200", 0.75, 0.50},
};

const char *plan_gpu_of(const char *model) {
  /* The more specific names first, as peak.c's table; a GH200's GPU is an H200's. */
  static const struct {
    const char *part, *preset;
  } BY_NAME[] = {{"H100 PCIe", "h100-pcie"}, {"H100 NVL", "h100-nvl"}, {"H100", "h100-sxm"}, {"H200", "h200"},
                 {"A100-PCIE", "a100-pcie"}, {"A100", "a100-sxm"}, {"B200", "b200"},
                 {"L40S", "l40s"}};
  for (size_t i = 0; i < COUNT(BY_NAME); i++)
    if (strstr(model, BY_NAME[i].part)) return BY_NAME[i].preset;
  return NULL;
}

/* On every GPU: a streaming kernel at 80% of HBM's bandwidth, NCCL's rings at 80% of the
 * links' line rate (its bus bandwidth over NVLink 4's 450 GB/s); a launch costs the host
 * 5 us, an op the GPU at least 3. */
static const double GPU_MEMORY_EFFICIENCY = 0.80, GPU_LINK_EFFICIENCY = 0.80;
static const double GPU_LAUNCH_S = 5e-6, GPU_OP_S = 3e-6;
/* The host's memory a rank has for an offloaded optimizer (a server's 150-300 GB/s over 8
 * ranks). */
static const double GPU_HOST_MEMORY = 20e9;
/* On a CPU the probes are what its kernels reach: the products at the probe's rate, the
 * attention's at half of it (bench/cpu_layers.sh), the streaming ops at the probed
 * bandwidth. Each op starts OpenMP's team. */
static const struct plan_efficiency CPU_EFFICIENCY = {1.0, 0.5, 1.0, 1.0};
static const double CPU_LAUNCH_S = 2e-6, CPU_OP_S = 5e-6;

static void names(char *out, size_t size, const char *const *list, size_t n, size_t stride) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && len + 1 < size; i++) {
    const char *name = *(const char *const *)((const char *)list + i * stride);
    len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "", name);
  }
}

static const struct link_preset *link_preset(const char *name) {
  for (size_t i = 0; i < COUNT(LINKS); i++)
    if (strcmp(LINKS[i].name, name) == 0) return &LINKS[i];
  return NULL;
}

static void set_link_preset(struct comm_link *l, char *label, const struct link_preset *p) {
  l->bytes_per_s = p->gbytes_per_s * 1e9;
  l->latency_s = p->latency_us * 1e-6;
  snprintf(label, PLAN_NAME_MAX, "%s", p->name);
}

void plan_machine_link(struct plan_machine *m, const char *spec) {
  const char *eq = strchr(spec, '=');
  size_t side = eq ? (size_t)(eq - spec) : 0;
  int intra = side == 5 && strncmp(spec, "intra", 5) == 0, inter = side == 5 && strncmp(spec, "inter", 5) == 0;
  if (!intra && !inter)
    fsdp_fatal("--link %s: say which link: intra=... (within a machine) or inter=... (between machines)", spec);
  struct comm_link *l = intra ? &m->links.intra : &m->links.inter;
  char *label = intra ? m->intra_name : m->inter_name;
  const char *value = eq + 1;
  const struct link_preset *p = link_preset(value);
  if (p) {
    set_link_preset(l, label, p);
    return;
  }
  char rate[64];
  const char *comma = strchr(value, ',');
  size_t n = comma ? (size_t)(comma - value) : strlen(value);
  if (n == 0 || n >= sizeof rate) fsdp_fatal("--link %s: no rate (RATE[,LATENCY], or a preset)", spec);
  memcpy(rate, value, n);
  rate[n] = '\0';
  if ((p = link_preset(rate)))
    fsdp_fatal("--link %s: a preset comes with its latency (%s: %g us); for another, give RATE,LATENCY (%gGB/s,%s)",
               spec, p->name, p->latency_us, p->gbytes_per_s, comma + 1);
  if (!strchr("0123456789.+-", rate[0])) {
    char known[512];
    names(known, sizeof known, &LINKS[0].name, COUNT(LINKS), sizeof LINKS[0]);
    fsdp_fatal("--link %s: unknown link '%s' (known: %s; or RATE[,LATENCY] such as 900GB/s,2us)", spec, rate, known);
  }
  l->bytes_per_s = rate_figure("--link", spec, rate);
  l->latency_s = comma ? latency_figure(spec, comma + 1) : 5e-6;
  snprintf(label, PLAN_NAME_MAX, "%s", value);
}

void plan_machine_efficiency(struct plan_machine *m, const char *spec) {
  char *text = strdup(spec), *save = NULL;
  if (!text) fsdp_fatal("--efficiency: out of memory");
  for (char *part = strtok_r(text, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(part, '=');
    if (!eq) fsdp_fatal("--efficiency %s: '%s' is not CLASS=FRACTION (matmul, attention, memory or link)", spec, part);
    *eq = '\0';
    double *field = strcmp(part, "matmul") == 0      ? &m->efficiency.matmul
                    : strcmp(part, "attention") == 0 ? &m->efficiency.attention
                    : strcmp(part, "memory") == 0    ? &m->efficiency.memory
                    : strcmp(part, "link") == 0      ? &m->efficiency.link
                                                     : NULL;
    if (!field)
      fsdp_fatal("--efficiency %s: unknown op class '%s' (known: matmul, attention, memory, link)", spec, part);
    char *end;
    double v = strtod(eq + 1, &end);
    /* Below a thousandth a step's times stop being of any machine (and soon finite). */
    if (end == eq + 1 || *end || !(v >= 1e-3 && v <= 1))
      fsdp_fatal("--efficiency %s: %s=%s must be a fraction in [0.001, 1]", spec, part, eq + 1);
    *field = v;
  }
  free(text);
}

void plan_machine_gpu(struct plan_machine *m, const char *spec) {
  char name[64];
  const char *comma = strchr(spec, ',');
  size_t n = comma ? (size_t)(comma - spec) : strlen(spec);
  snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), spec);
  const struct gpu_preset *g = NULL;
  for (size_t i = 0; i < COUNT(GPUS); i++)
    if (strcmp(GPUS[i].name, name) == 0) g = &GPUS[i];
  if (!g) {
    char known[256];
    names(known, sizeof known, &GPUS[0].name, COUNT(GPUS), sizeof GPUS[0]);
    fsdp_fatal("--gpu %s: unknown GPU '%s' (known: %s)", spec, name, known);
  }
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", g->name);
  m->peak_flops = peak_gpu_gflops(g->part) * 1e9;
  m->memory_bytes_per_s = g->hbm_gbytes_per_s * 1e9;
  m->capacity_bytes = g->memory_mib * 1048576.0;
  m->host_link_bytes_per_s = g->host_gbytes_per_s * 1e9;
  m->host_memory_bytes_per_s = GPU_HOST_MEMORY;
  m->launch_s = GPU_LAUNCH_S;
  m->op_s = GPU_OP_S;
  m->efficiency = (struct plan_efficiency){g->matmul, g->attention, GPU_MEMORY_EFFICIENCY, GPU_LINK_EFFICIENCY};
  m->compute_scale = m->intra_scale = 1.0;
  m->links.ranks_per_node = 8;
  set_link_preset(&m->links.intra, m->intra_name, link_preset(g->intra));
  set_link_preset(&m->links.inter, m->inter_name, link_preset(g->inter));
  /* Figures after the name: memory=SIZE, hbm=RATE, host=RATE. */
  while (comma) {
    const char *part = comma + 1;
    comma = strchr(part, ',');
    char field[96];
    size_t len = comma ? (size_t)(comma - part) : strlen(part);
    snprintf(field, sizeof field, "%.*s", (int)(len < sizeof field ? len : sizeof field - 1), part);
    char *eq = strchr(field, '=');
    if (eq) *eq = '\0';
    if (eq && strcmp(field, "memory") == 0)
      m->capacity_bytes = flag_quantity("--gpu", eq + 1, SIZE_UNITS, COUNT(SIZE_UNITS), SIZE_FORM);
    else if (eq && strcmp(field, "hbm") == 0)
      m->memory_bytes_per_s = rate_figure("--gpu", spec, eq + 1);
    else if (eq && strcmp(field, "host") == 0)
      m->host_link_bytes_per_s = rate_figure("--gpu", spec, eq + 1);
    else
      fsdp_fatal("--gpu %s: '%s' is not memory=SIZE, hbm=RATE or host=RATE", spec, part);
  }
}

void plan_machine_cpu(struct plan_machine *m, enum dtype compute_dtype) {
  memset(m, 0, sizeof *m);
  struct device *meta = device_open(DEVICE_META, DEVICE_CPU);
  struct comm_group *one = comm_meta_group(meta, 1, 0);
  double gflops = peak_gflops(0.0f, compute_dtype, device_cpu(), one);
  comm_group_free(one);
  device_close(meta);
  m->cpu_cores = available_cores();
  m->threads_per_rank = nn_num_threads();
  snprintf(m->name, sizeof m->name, "this machine's cpu (%d cores, %d threads a rank)", m->cpu_cores,
           m->threads_per_rank);
  m->peak_flops = gflops * 1e9;
  m->memory_bytes_per_s = peak_memory_bytes_per_s();
  m->host_link_bytes_per_s = m->memory_bytes_per_s / 2;
  m->host_memory_bytes_per_s = m->memory_bytes_per_s;
  m->launch_s = CPU_LAUNCH_S;
  m->op_s = CPU_OP_S;
  m->efficiency = CPU_EFFICIENCY;
  m->compute_scale = m->intra_scale = 1.0;
  m->links.ranks_per_node = m->links.nics_per_node = 1;
  set_link_preset(&m->links.intra, m->intra_name, link_preset("loopback"));
  set_link_preset(&m->links.inter, m->inter_name, link_preset("ethernet-25g"));
}

void plan_machine_speed(const struct plan_machine *m, struct device_speed *device, struct device_speed *host,
                        struct comm_links *links) {
  const struct plan_efficiency *e = &m->efficiency;
  /* The ranks of a machine whose threads outnumber its cores share them. */
  double threads = (double)m->links.ranks_per_node * m->threads_per_rank;
  double c = m->compute_scale * (m->cpu_cores && threads > m->cpu_cores ? m->cpu_cores / threads : 1.0);
  *device = (struct device_speed){m->peak_flops * e->matmul * c, m->peak_flops * e->attention * c,
                                  m->memory_bytes_per_s * e->memory * c, m->host_link_bytes_per_s,
                                  m->launch_s, m->op_s};
  /* The host's work under --offload cpu: streaming ops on its memory, nothing else. */
  *host = (struct device_speed){0, 0, m->host_memory_bytes_per_s, m->host_memory_bytes_per_s / 2, 0, CPU_OP_S};
  *links = m->links;
  links->intra.bytes_per_s *= e->link * m->intra_scale;
  links->inter.bytes_per_s *= e->link;
}
