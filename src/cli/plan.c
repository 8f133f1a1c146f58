/* `fsdp plan`: the memory per rank, the traffic and the time of a training configuration.
 * It runs two steps of the very training `fsdp train` runs (src/train/step_plan.c), on the
 * meta device over a meta group of --world-size ranks: every allocation is made and
 * counted, no byte is touched, nothing is computed, and each launch is charged what it
 * takes on the machine planned for (fsdp/meta_clock.h): --gpu's or this machine's CPU, over
 * --link's links, scaled to a logged run by --calibrate. The second step is reported: it
 * starts with what the first one's optimizer prefetched, as every later step does. A plan
 * for --device cuda names the GPU arch it is for (--cuda-arch, else this machine's GPU,
 * else sm_90), the shared memory a block may have there and the attention kernels' tiling
 * in it (fsdp/cuda_arch.h): what the launchers would choose on such a GPU. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/cuda_arch.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/nn.h"
#include "fsdp/train.h"
#include "plan.h"

/* The GPU a --device cuda plan is for, and the attention's tiling there. */
struct plan_arch {
  char name[16];       /* "sm_86" */
  int major, minor;
  size_t smem_optin;   /* the shared memory a block may have */
  const char *gpus;    /* some GPUs of the arch ("" for one not in the table) */
  const char *source;  /* "--cuda-arch", "this machine's GPU" or "assumed" */
  int head_dim, tensor_cores;
  enum dtype dtype;    /* the attention's: the compute dtype */
  struct cuda_attention_tiling tiling[3]; /* by enum cuda_attention_kernel */
};

static void plan_arch(const struct command_options *o, struct plan_arch *a) {
  memset(a, 0, sizeof *a);
  const struct cuda_arch *arch = NULL;
  int major = 0, minor = 0;
  size_t smem = 0;
  if (o->cuda_arch) {
    arch = cuda_arch_find(o->cuda_arch);
    a->source = "--cuda-arch";
  } else if (device_cuda_capability(&major, &minor, &smem)) {
    a->source = "this machine's GPU";
    snprintf(a->name, sizeof a->name, "sm_%d%d", major, minor);
    a->major = major, a->minor = minor, a->smem_optin = smem;
    const struct cuda_arch *known = cuda_arch_of(major, minor);
    a->gpus = known ? known->gpus : "";
  } else {
    arch = cuda_arch_find(CUDA_ARCH_DEFAULT);
    a->source = "assumed";
  }
  if (arch) {
    snprintf(a->name, sizeof a->name, "%s", arch->name);
    a->major = arch->major, a->minor = arch->minor, a->smem_optin = arch->smem_optin, a->gpus = arch->gpus;
  }
  a->head_dim = o->run.model.config.n_embd / o->run.model.config.n_head;
  a->dtype = o->run.mp.param_dtype; /* a GPU computes in the param dtype (nn_compute_dtype) */
  a->tensor_cores = cuda_attention_tensor_cores(a->dtype, a->head_dim);
  for (int k = CUDA_ATTENTION_FORWARD; k <= CUDA_ATTENTION_BACKWARD_Q; k++) {
    a->tiling[k] = cuda_attention_tiling((enum cuda_attention_kernel)k, a->tensor_cores, a->head_dim, a->smem_optin);
    if (!a->tiling[k].rows)
      fsdp_fatal("plan: on %s (%s), a block may have %zu bytes of shared memory: the attention %s at head dim %d in "
                 "%s needs %zu",
                 a->name, a->source, a->smem_optin, cuda_attention_kernel_name((enum cuda_attention_kernel)k),
                 a->head_dim, dtype_name(a->dtype), a->tiling[k].smem);
  }
}

/* The part of a ring's hops that leave a machine, on average over the groups of one
 * kind: group g holds ranks first + g * group_step + k * stride, k < size, in ring
 * order, and rank r runs on machine r / per_node. A rank of a ring sends all its bytes
 * to the next one, so this is the part of a rank's bytes, on average over the ranks,
 * that goes between machines. */
static double between_nodes_fraction(int groups, int group_step, int size, int stride, int per_node) {
  if (size == 1) return 0.0;
  int crossing = 0;
  for (int g = 0; g < groups; g++)
    for (int k = 0; k < size; k++) {
      int from = g * group_step + k * stride, to = g * group_step + (k + 1) % size * stride;
      crossing += from / per_node != to / per_node;
    }
  return (double)crossing / ((double)groups * size);
}

static double sent(const struct comm_traffic *t) { return t->all_gather + t->reduce_scatter + t->all_reduce; }

/* Shard group g is ranks g S .. g S + S - 1; replicate group k is ranks k, k + S, .... */
static void split_by_node(struct plan *p) {
  int per_node = p->machine.links.ranks_per_node;
  double shard_between = between_nodes_fraction(p->replicas, p->shard, p->shard, 1, per_node);
  double replicate_between = between_nodes_fraction(p->shard, 1, p->replicas, p->shard, per_node);
  double shard_bytes = sent(&p->step.traffic), replicate_bytes = sent(&p->step.replicate_traffic);
  p->between_nodes = shard_between * shard_bytes + replicate_between * replicate_bytes;
  p->within_node = shard_bytes + replicate_bytes - p->between_nodes;
}

static int is_cuda(const struct train_config *run) { return strcmp(run->model.device, "cuda") == 0; }

int plan_ranks_per_node(const struct command_options *o, const struct train_config *run, int world_size) {
  if (o->ranks_per_node) return o->ranks_per_node;
  if (is_cuda(run)) return world_size < 8 ? world_size : 8;
  int replicas, shard;
  train_config_mesh(run, world_size, &replicas, &shard);
  return shard;
}

void make_plan(const struct command_options *o, const struct train_config *run, int world_size,
               const struct plan_machine *machine, struct plan *p) {
  memset(p, 0, sizeof *p);
  p->world_size = world_size;
  train_config_mesh(run, world_size, &p->replicas, &p->shard);
  p->machine = *machine;
  p->machine.links.ranks_per_node = plan_ranks_per_node(o, run, world_size);
  plan_step(run, world_size, &p->machine, &p->step);
  /* Figures each in range may still multiply beyond a double (an --efficiency near 0). */
  const struct step_time *t = &p->step.time;
  double times[] = {t->step_ms, t->tokens_per_s, t->all_gather_ms, t->reduce_scatter_ms, t->replicate_ms,
                    t->exposed_ms};
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
    if (!isfinite(times[i]))
      fsdp_fatal("plan: at world size %d the step takes %g ms, its all-gathers %g, its reduce-scatters %g: no time "
                 "the clock can keep; the figures of --gpu, --link, --efficiency or --calibrate are beyond a machine's",
                 world_size, t->step_ms, t->all_gather_ms, t->reduce_scatter_ms);
  split_by_node(p);
}

/* The machine a plan is timed on: --gpu's (else this machine's GPU, else an H100 SXM) or
 * this machine's CPU, with --link's links and --efficiency's shares, and --calibrate's
 * scales. */
static void plan_machine(const struct command_options *o, struct plan_machine *m) {
  /* Bad figures are refused before the probes run. */
  struct plan_machine checked = {0};
  for (int i = 0; i < o->links.n; i++) {
    plan_machine_link(&checked, o->links.given[i]);
    /* Its side, "intra=" or "inter=" (plan_machine_link has checked it), given before. */
    for (int j = 0; j < i; j++)
      if (strncmp(o->links.given[i], o->links.given[j], sizeof "intra=" - 1) == 0)
        fsdp_fatal("--link %s and --link %s: one link given twice", o->links.given[j], o->links.given[i]);
  }
  if (o->efficiency) plan_machine_efficiency(&checked, o->efficiency);
  if (is_cuda(&o->run)) {
    const char *gpu = o->gpu;
    char model[256] = "", why[256];
    if (!gpu && device_cuda_available(why, sizeof why)) {
      struct device *here = device_open(DEVICE_CUDA, DEVICE_CUDA);
      device_model(here, model, sizeof model);
      gpu = plan_gpu_of(model);
      device_close(here);
    }
    plan_machine_gpu(m, gpu ? gpu : "h100-sxm");
  } else {
    plan_machine_cpu(m, nn_compute_dtype(device_cpu(), o->run.mp.param_dtype));
  }
  for (int i = 0; i < o->links.n; i++) plan_machine_link(m, o->links.given[i]);
  if (o->nics_per_node) m->links.nics_per_node = o->nics_per_node;
  if (o->efficiency) plan_machine_efficiency(m, o->efficiency);
  /* A logged run's ranks were on as few machines as they could be (plan_calibrate). */
  struct plan_machine per_node = *m;
  per_node.links.ranks_per_node = o->ranks_per_node ? o->ranks_per_node : is_cuda(&o->run) ? 8 : 1 << 20;
  for (int i = 0; i < o->calibrate.n; i++) plan_calibrate(&o->run, &per_node, o->calibrate.given[i]);
  m->compute_scale = per_node.compute_scale;
  m->intra_scale = per_node.intra_scale;
  m->links.inter.latency_s = per_node.links.inter.latency_s;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static void print_categories(const struct mem_stats *s) {
  printf("  %-18s %14s %10s %16s\n", "category", "peak bytes", "MiB", "at total peak");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
    printf("  %-18s %14zu %10.2f %16.2f\n", mem_category_name(c), s->peak[c], mib((double)s->peak[c]),
           mib((double)s->at_total_peak[c]));
  printf("  %-18s %14zu %10.2f\n", "total (peak)", s->total_peak, mib((double)s->total_peak));
}

static size_t model_state_bytes(const struct mem_stats *s) {
  return s->peak[MEM_SHARDED_PARAMS] + s->peak[MEM_SHARDED_GRADS] + s->peak[MEM_OPTIMIZER];
}

static void print_arch_text(const struct plan_arch *a) {
  printf("      GPU arch %s (compute capability %d.%d%s%s; %s): %zu bytes (%.0f KiB) of shared memory a block\n",
         a->name, a->major, a->minor, a->gpus[0] ? ": " : "", a->gpus,
         strcmp(a->source, "assumed") == 0 ? "assumed, no GPU here: --cuda-arch names another" : a->source,
         a->smem_optin, (double)a->smem_optin / 1024.0);
  const struct cuda_attention_tiling *t = a->tiling;
  printf("      attention at head dim %d in %s: %s, %zu / %zu / %zu bytes of shared memory a block (forward / dk, dv / "
         "dq), the other side's tile %d / %d / %d rows at a time\n",
         a->head_dim, dtype_name(a->dtype), a->tensor_cores ? "tensor cores" : "CUDA cores", t[0].smem, t[1].smem,
         t[2].smem, t[0].rows, t[1].rows, t[2].rows);
}

static void print_machine(const struct plan_machine *m);
static void print_plan_time(const struct plan *p);

static void print_text(const struct command_options *options, const struct plan *p, const struct plan_arch *a) {
  const struct train_config *o = &options->run;
  const struct step_plan *s = &p->step;
  printf("plan: %s, %zu parameters in %d units; %s sharding over %d ranks; batch %d x %d per rank x %d "
         "micro-batches (%s)\n",
         o->model.name, s->numel, s->n_units, sharding_strategy_name(o->model.sharding), options->world_size, s->B,
         o->seq_len, o->grad_accum, o->accum_mode == ACCUM_NO_SYNC ? "no-sync" : "sharded");
  printf("      activation checkpointing %s, param dtype %s, reduce dtype %s; on %s%s\n",
         o->ac_every == 0 ? "none" : o->ac_every == 1 ? "full" : "every k-th block", dtype_name(o->mp.param_dtype),
         dtype_name(o->mp.reduce_dtype), o->model.device,
         o->offload_cpu ? ", sharded state offloaded to pinned host memory" : "");
  printf("      %d OpenMP thread(s) per rank, as here (OMP_NUM_THREADS)\n", nn_num_threads());
  if (a) print_arch_text(a);
  printf("\n%s memory per rank in a training step:\n", o->model.device);
  print_categories(&s->mem);
  if (s->host.total_peak) {
    printf("\nhost memory per rank (pinned), apart from the %s peak above:\n", o->model.device);
    print_categories(&s->host);
  }
  size_t state = model_state_bytes(&s->mem) + model_state_bytes(&s->host);
  printf("  model state (sharded params, grads, AdamW) %.2f MiB = %.2f bytes per parameter\n", mib((double)state),
         (double)state / (double)s->numel);
  printf("\ntraffic per rank per step (each rank receives as much as it sends):\n");
  printf("  all-gather      %12.2f MiB sent\n", mib(s->traffic.all_gather));
  printf("  reduce-scatter  %12.2f MiB sent\n", mib(s->traffic.reduce_scatter));
  printf("  all-reduce      %12.2f MiB sent\n", mib(s->traffic.all_reduce));
  if (p->replicas > 1)
    printf("  replicate all-reduce %7.2f MiB sent (HSDP mesh %d x %d: across the replicas)\n",
           mib(sent(&s->replicate_traffic)), p->replicas, p->shard);
  printf("  within a machine     %7.2f MiB, between machines %.2f MiB (%d consecutive ranks per machine, rings "
         "in rank order; on average over the ranks)\n",
         mib(p->within_node), mib(p->between_nodes), p->machine.links.ranks_per_node);
  printf("\n");
  print_machine(&p->machine);
  print_plan_time(p);
}

/* ---- the step's time ---- */

static const char *const COMM_STREAMS[] = {"all-gather", "reduce-scatter", "replicate all-reduce"};

/* The compute stream's time, which adds up to the host's clock: its work, its waits for
 * each collective's stream, and the rest the host kept it waiting (launches, the host's
 * own work; on the cpu, where the compute stream is the host's thread, its waits in a
 * synchronize too). */
struct critical_path {
  double total_ms, compute_ms, waits_ms[3], host_ms;
};

static struct critical_path critical_path(const struct plan *p) {
  const struct meta_clock_reading *r = &p->step.time.clock;
  struct critical_path c = {r->host_s * 1e3, meta_tally_sum(r->busy, r->n_busy, "compute", NULL) * 1e3, {0}, 0};
  int host_thread = p->machine.cpu_cores > 0;
  double accounted = c.compute_ms;
  for (int k = 0; k < 3; k++) {
    c.waits_ms[k] = meta_tally_sum(r->idle, r->n_idle, "compute", COMM_STREAMS[k]) * 1e3;
    if (host_thread) c.waits_ms[k] += meta_tally_sum(r->idle, r->n_idle, "host", COMM_STREAMS[k]) * 1e3;
    accounted += c.waits_ms[k];
  }
  c.host_ms = c.total_ms - accounted;
  return c;
}

static double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

static void print_machine(const struct plan_machine *m) {
  const struct plan_efficiency *e = &m->efficiency;
  if (m->cpu_cores)
    printf("step time on %s: products %.1f GFLOP/s (probed), memory %.1f GB/s (probed); of these, matmul %.2f, "
           "attention %.2f, memory %.2f\n",
           m->name, m->peak_flops / 1e9, m->memory_bytes_per_s / 1e9, e->matmul, e->attention, e->memory);
  else
    printf("step time on %s: %.0f TFLOP/s dense bf16, HBM %.0f GB/s, %.1f GiB; of these, matmul %.2f, attention "
           "%.2f, memory %.2f\n",
           m->name, m->peak_flops / 1e12, m->memory_bytes_per_s / 1e9, gib(m->capacity_bytes), e->matmul,
           e->attention, e->memory);
  char nics[32] = "a NIC a rank";
  if (m->links.nics_per_node) snprintf(nics, sizeof nics, "%d NIC(s) a machine", m->links.nics_per_node);
  printf("      links: %s within a machine (%.1f GB/s, %.1f us), %s between machines (%.1f GB/s, %.1f us), %d "
         "ranks and %s; rings at %.2f of the line rate\n",
         m->intra_name, m->links.intra.bytes_per_s / 1e9, m->links.intra.latency_s * 1e6, m->inter_name,
         m->links.inter.bytes_per_s / 1e9, m->links.inter.latency_s * 1e6, m->links.ranks_per_node, nics, e->link);
  if (m->compute_scale != 1.0 || m->intra_scale != 1.0)
    printf("      calibrated: compute at %.3f x these rates, links within a machine at %.3g x\n", m->compute_scale,
           m->intra_scale);
}

static int by_seconds(const void *a, const void *b) {
  double x = (*(const struct meta_tally *const *)a)->seconds, y = (*(const struct meta_tally *const *)b)->seconds;
  return (y > x) - (y < x);
}

/* The compute stream's ops, the busiest first; returns how many. */
static int compute_ops(const struct meta_clock_reading *r, const struct meta_tally **out) {
  int n = 0;
  for (int i = 0; i < r->n_busy; i++)
    if (strcmp(r->busy[i].stream, "compute") == 0) out[n++] = &r->busy[i];
  qsort(out, (size_t)n, sizeof *out, by_seconds);
  return n;
}

static int fits(const struct plan *p) {
  return !p->machine.capacity_bytes || (double)p->step.mem.total_peak <= p->machine.capacity_bytes;
}

/* The time of a plan's step, in words: where the compute stream's time goes. */
static void print_plan_time(const struct plan *p) {
  const struct step_time *t = &p->step.time;
  struct critical_path c = critical_path(p);
  double share = c.total_ms > 0 ? 100.0 / c.total_ms : 0;
  printf("  step %14.2f ms   %.0f tokens/s (%.0f a rank)", t->step_ms, t->tokens_per_s,
         t->tokens_per_s / p->world_size);
  if (!isnan(t->mfu)) printf(", MFU %.1f%%", 100.0 * t->mfu);
  printf("\n  the compute stream: computing %.2f ms (%.1f%%)", c.compute_ms, c.compute_ms * share);
  for (int k = 0; k < 3; k++)
    if (c.waits_ms[k] > 0)
      printf(", waiting for %s %.2f (%.1f%%)", COMM_STREAMS[k], c.waits_ms[k], c.waits_ms[k] * share);
  printf(", for the host %.2f (%.1f%%)\n", c.host_ms, c.host_ms * share);
  printf("  collectives busy: all-gather %.2f ms, reduce-scatter %.2f, replicate all-reduce %.2f; exposed %.2f (the "
         "log's exposed_comm_ms)\n",
         t->all_gather_ms, t->reduce_scatter_ms, t->replicate_ms, t->exposed_ms);
  const struct meta_tally *ops[META_CLOCK_TALLIES];
  int n = compute_ops(&t->clock, ops);
  printf("  compute by op:");
  for (int i = 0; i < n && i < 6; i++)
    printf("%s %s %.2f ms (%.0f%%)", i ? "," : "", ops[i]->what, ops[i]->seconds * 1e3,
           c.compute_ms > 0 ? 100.0 * ops[i]->seconds * 1e3 / c.compute_ms : 0);
  printf("\n");
  if (p->machine.capacity_bytes)
    printf("  memory: peak %.2f GiB of the GPU's %.2f GiB: %s\n", gib((double)p->step.mem.total_peak),
           gib(p->machine.capacity_bytes), fits(p) ? "fits" : "does not fit");
}

static void add_time_json(cJSON *j, const struct plan *p) {
  const struct step_time *t = &p->step.time;
  const struct plan_machine *m = &p->machine;
  cJSON *time = cJSON_AddObjectToObject(j, "time");
  cJSON *machine = cJSON_AddObjectToObject(time, "machine");
  cJSON_AddStringToObject(machine, "name", m->name);
  cJSON_AddNumberToObject(machine, "peak_flops", m->peak_flops);
  cJSON_AddNumberToObject(machine, "memory_bytes_per_s", m->memory_bytes_per_s);
  cJSON_AddNumberToObject(machine, "capacity_bytes", m->capacity_bytes);
  cJSON_AddNumberToObject(machine, "ranks_per_node", m->links.ranks_per_node);
  cJSON_AddNumberToObject(machine, "nics_per_node", m->links.nics_per_node ? m->links.nics_per_node
                                                                           : m->links.ranks_per_node);
  cJSON_AddStringToObject(machine, "intra_link", m->intra_name);
  cJSON_AddNumberToObject(machine, "intra_bytes_per_s", m->links.intra.bytes_per_s);
  cJSON_AddNumberToObject(machine, "intra_latency_s", m->links.intra.latency_s);
  cJSON_AddStringToObject(machine, "inter_link", m->inter_name);
  cJSON_AddNumberToObject(machine, "inter_bytes_per_s", m->links.inter.bytes_per_s);
  cJSON_AddNumberToObject(machine, "inter_latency_s", m->links.inter.latency_s);
  cJSON *e = cJSON_AddObjectToObject(machine, "efficiency");
  cJSON_AddNumberToObject(e, "matmul", m->efficiency.matmul);
  cJSON_AddNumberToObject(e, "attention", m->efficiency.attention);
  cJSON_AddNumberToObject(e, "memory", m->efficiency.memory);
  cJSON_AddNumberToObject(e, "link", m->efficiency.link);
  cJSON_AddNumberToObject(machine, "compute_scale", m->compute_scale);
  cJSON_AddNumberToObject(machine, "intra_scale", m->intra_scale);
  cJSON_AddNumberToObject(time, "step_ms", t->step_ms);
  cJSON_AddNumberToObject(time, "tokens_per_s", t->tokens_per_s);
  cJSON_AddNumberToObject(time, "tokens_per_s_per_rank", t->tokens_per_s / p->world_size);
  if (!isnan(t->mfu)) cJSON_AddNumberToObject(time, "mfu", t->mfu);
  cJSON_AddNumberToObject(time, "all_gather_ms", t->all_gather_ms);
  cJSON_AddNumberToObject(time, "reduce_scatter_ms", t->reduce_scatter_ms);
  cJSON_AddNumberToObject(time, "replicate_all_reduce_ms", t->replicate_ms);
  cJSON_AddNumberToObject(time, "exposed_comm_ms", t->exposed_ms);
  struct critical_path c = critical_path(p);
  cJSON *path = cJSON_AddObjectToObject(time, "critical_path_ms");
  cJSON_AddNumberToObject(path, "compute", c.compute_ms);
  for (int k = 0; k < 3; k++) cJSON_AddNumberToObject(path, COMM_STREAMS[k], c.waits_ms[k]);
  cJSON_AddNumberToObject(path, "host", c.host_ms);
  cJSON_AddNumberToObject(path, "total", c.total_ms);
  cJSON *ops = cJSON_AddObjectToObject(time, "compute_ms_by_op");
  const struct meta_clock_reading *r = &t->clock;
  for (int i = 0; i < r->n_busy; i++)
    if (strcmp(r->busy[i].stream, "compute") == 0)
      cJSON_AddNumberToObject(ops, r->busy[i].what, r->busy[i].seconds * 1e3);
  if (m->capacity_bytes) cJSON_AddBoolToObject(time, "fits", fits(p));
}

static void add_arch_json(cJSON *j, const struct plan_arch *a) {
  cJSON *arch = cJSON_AddObjectToObject(j, "cuda_arch");
  cJSON_AddStringToObject(arch, "name", a->name);
  char capability[16];
  snprintf(capability, sizeof capability, "%d.%d", a->major, a->minor);
  cJSON_AddStringToObject(arch, "compute_capability", capability);
  cJSON_AddStringToObject(arch, "source", a->source);
  cJSON_AddNumberToObject(arch, "smem_per_block_bytes", (double)a->smem_optin);
  cJSON *attention = cJSON_AddObjectToObject(arch, "attention");
  cJSON_AddNumberToObject(attention, "head_dim", a->head_dim);
  cJSON_AddStringToObject(attention, "dtype", dtype_name(a->dtype));
  cJSON_AddBoolToObject(attention, "tensor_cores", a->tensor_cores);
  static const char *const KEYS[] = {"forward", "backward_kv", "backward_q"};
  for (int k = 0; k < 3; k++) {
    cJSON *kernel = cJSON_AddObjectToObject(attention, KEYS[k]);
    cJSON_AddNumberToObject(kernel, "rows", a->tiling[k].rows);
    cJSON_AddNumberToObject(kernel, "smem_bytes", (double)a->tiling[k].smem);
  }
}

void print_json_and_free(cJSON *j) {
  char *text = cJSON_Print(j);
  if (!text) fsdp_fatal("plan: out of memory printing JSON");
  printf("%s\n", text);
  cJSON_free(text);
  cJSON_Delete(j);
}

static void print_json(const struct command_options *o, const struct plan *p, const struct plan_arch *a) {
  const struct step_plan *s = &p->step;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "world_size", o->world_size);
  char setup[TRAIN_SETUP_TEXT_MAX];
  train_config_setup_text(&o->run, o->world_size, setup);
  cJSON_AddStringToObject(j, "setup", setup);
  cJSON_AddNumberToObject(j, "parameters", (double)s->numel);
  cJSON_AddNumberToObject(j, "batch_per_rank", s->B);
  cJSON_AddNumberToObject(j, "openmp_threads_per_rank", nn_num_threads());
  cJSON *peak = cJSON_AddObjectToObject(j, "peak_bytes"), *at = cJSON_AddObjectToObject(j, "at_total_peak_bytes");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++) {
    cJSON_AddNumberToObject(peak, mem_category_name(c), (double)s->mem.peak[c]);
    cJSON_AddNumberToObject(at, mem_category_name(c), (double)s->mem.at_total_peak[c]);
  }
  cJSON_AddNumberToObject(j, "total_peak_bytes", (double)s->mem.total_peak);
  cJSON *host = cJSON_AddObjectToObject(j, "host_peak_bytes");
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
    cJSON_AddNumberToObject(host, mem_category_name(c), (double)s->host.peak[c]);
  cJSON_AddNumberToObject(j, "host_total_peak_bytes", (double)s->host.total_peak);
  cJSON *traffic = cJSON_AddObjectToObject(j, "sent_bytes_per_step");
  cJSON_AddNumberToObject(traffic, "all_gather", s->traffic.all_gather);
  cJSON_AddNumberToObject(traffic, "reduce_scatter", s->traffic.reduce_scatter);
  cJSON_AddNumberToObject(traffic, "all_reduce", s->traffic.all_reduce);
  cJSON_AddNumberToObject(traffic, "replicate_all_reduce", sent(&s->replicate_traffic));
  cJSON_AddNumberToObject(traffic, "within_node", p->within_node);
  cJSON_AddNumberToObject(traffic, "between_nodes", p->between_nodes);
  cJSON_AddNumberToObject(j, "mesh_replicate", p->replicas);
  cJSON_AddNumberToObject(j, "mesh_shard", p->shard);
  cJSON_AddNumberToObject(j, "ranks_per_node", p->machine.links.ranks_per_node);
  if (a) add_arch_json(j, a);
  add_time_json(j, p);
  print_json_and_free(j);
}

int fsdp_plan_main(int argc, char **argv) {
  struct command_options o;
  if (command_options_parse(COMMAND_PLAN, &o, argc, argv)) return 0;
  fsdp_log_info_to_stderr(); /* stdout is the plan */
  struct plan_arch arch;
  int cuda = strcmp(o.run.model.device, "cuda") == 0;
  if (cuda) plan_arch(&o, &arch);
  struct plan_machine machine;
  plan_machine(&o, &machine);
  if (o.sweep) return plan_sweep(&o, &machine);
  struct plan p;
  make_plan(&o, &o.run, o.world_size, &machine, &p);
  if (strcmp(o.format, "json") == 0)
    print_json(&o, &p, cuda ? &arch : NULL);
  else
    print_text(&o, &p, cuda ? &arch : NULL);
  return 0;
}
