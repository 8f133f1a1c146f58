#include "fsdp/runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"
#include "wrap.h"

void fsdp_model_init(struct fsdp_model *m, struct device *device, struct comm_group *group,
                     enum sharding_strategy strategy, const struct fsdp_overlap *overlap,
                     const struct fsdp_mixed_precision *mp) {
  fsdp_model_init_hybrid(m, device, group, NULL, strategy, overlap, mp);
}

void fsdp_model_init_hybrid(struct fsdp_model *m, struct device *device, struct comm_group *group,
                            struct comm_group *replicate, enum sharding_strategy strategy,
                            const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp) {
  memset(m, 0, sizeof *m);
  /* Replicas of a replicated model would be DDP over all of them. */
  FSDP_CHECK(!replicate || comm_size(replicate) == 1 || strategy != SHARD_NONE);
  m->device = device;
  m->group = group;
  m->world_size = comm_size(group);
  m->strategy = strategy;
  m->requires_grad_sync = 1;
  if (mp) m->mp = *mp;
  FSDP_CHECK(m->mp.reduce_dtype == DTYPE_F32 || (m->mp.reduce_dtype == DTYPE_BF16 && strategy != SHARD_NONE));
  m->overlap = overlap ? *overlap : FSDP_OVERLAP_DEFAULT;
  FSDP_CHECK(m->overlap.prefetch >= 0 && m->overlap.max_unsharded >= 1);
  if (m->overlap.blocking) {
    m->overlap.prefetch = 0;
    m->overlap.backward_prefetch = BACKWARD_PREFETCH_NONE;
  }
  fsdp_streams_init(&m->streams, device, group, replicate);
  m->streams.blocking = m->overlap.blocking;
  m->collective_done = event_create(device);
  m->scalar = device_alloc(device, (FSDP_METRICS_MAX + 2) * sizeof(double), MEM_OTHER, m->streams.compute);
  m->grad_scale = TENSOR_NONE;
}

void fsdp_model_free(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) {
    fsdp_unit_free(m->units[i]);
    free(m->units[i]);
  }
  m->n_units = 0;
  fsdp_model_free_modules(m);
  device_free(m->device, m->scalar, m->streams.compute);
  event_destroy(m->collective_done);
  fsdp_streams_free(&m->streams);
}

void fsdp_model_take_traffic(struct fsdp_model *m, struct comm_traffic *shard, struct comm_traffic *replicate) {
  struct comm_traffic gather, reduce;
  comm_take_traffic(m->streams.all_gather_group, &gather);
  comm_take_traffic(m->streams.reduce_scatter_group, &reduce);
  shard->all_gather = gather.all_gather + reduce.all_gather;
  shard->reduce_scatter = gather.reduce_scatter + reduce.reduce_scatter;
  shard->all_reduce = gather.all_reduce + reduce.all_reduce;
  memset(replicate, 0, sizeof *replicate);
  if (m->streams.replicate_group) comm_take_traffic(m->streams.replicate_group, replicate);
}

void fsdp_model_init_params(struct fsdp_model *m, uint64_t seed) {
  FSDP_CHECK(m->n_units > 0); /* wrapped */
  for (int i = 0; i < m->n_units; i++) fsdp_unit_init_params(m->units[i], seed);
}

void fsdp_model_reshard_all(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) fsdp_unit_reshard(m->units[i]);
}

static struct nn_ctx compute_ctx(struct fsdp_model *m) { return (struct nn_ctx){m->device, m->streams.compute}; }

/* Where the sharded state is worked on: the compute stream, or the host's under CPU offload. */
static struct nn_ctx home_ctx(struct fsdp_model *m) {
  struct stream *home = fsdp_streams_home(&m->streams);
  return (struct nn_ctx){stream_device(home), home};
}

/* grad_shard is final where it lives: under CPU offload the reductions' streams copy it
 * to the host, which waits for them before its kernels read it. */
static void wait_for_sharded_grads(struct fsdp_model *m) {
  fsdp_model_wait_for_grads(m);
  if (m->streams.host) stream_synchronize(m->streams.compute);
}

void fsdp_model_offload_to_cpu(struct fsdp_model *m) {
  FSDP_CHECK(m->n_units == 0); /* before fsdp_model_wrap makes the units */
  fsdp_streams_offload(&m->streams);
}

static struct tensor shard_of(const struct fsdp_unit *u, float *buffer) {
  return tensor_1d(buffer, DTYPE_F32, u->layout.shard);
}

/* On comm stream `on` over group g, after the compute stream's work so far, and waited
 * for. values (n) are in the device's memory (m->scalar). */
static void all_reduce_on(struct fsdp_model *m, struct stream *on, struct comm_group *g, double *values, int n,
                          enum comm_reduce_op op, const char *label) {
  struct fsdp_streams *s = &m->streams;
  event_record(m->collective_done, s->compute);
  stream_wait_event(on, m->collective_done);
  comm_all_reduce_async(g, on, label, values, (size_t)n, COMM_F64, op);
  event_record(m->collective_done, on);
  fsdp_streams_wait(s, m->collective_done, label);
}

/* Over the shard group (on the reduce-scatter stream). */
static void all_reduce_now(struct fsdp_model *m, double *values, int n, enum comm_reduce_op op, const char *label) {
  all_reduce_on(m, m->streams.reduce_scatter, m->streams.reduce_scatter_group, values, n, op, label);
}

/* Over every rank: the shard group, then across the replicas (an average of the
 * groups' averages is the average over all, the groups being the same size). */
static void all_reduce_everywhere(struct fsdp_model *m, double *values, int n, enum comm_reduce_op op,
                                  const char *label) {
  all_reduce_now(m, values, n, op, label);
  if (m->streams.replicate) all_reduce_on(m, m->streams.replicate, m->streams.replicate_group, values, n, op, label);
}

static double *grad_squares(struct fsdp_model *m) { return m->scalar + FSDP_METRICS_MAX; }

/* Padding is zero in every gradient shard, so a whole shard's sum of squares is that of
 * the elements this rank owns; summed over the shard group, every element counts once
 * (under HSDP the replicas hold the same shards and the same sum). On the meta device
 * nothing is summed: the norm is 0. */
void fsdp_model_measure_grad_norm(struct fsdp_model *m) {
  wait_for_sharded_grads(m);
  for (int i = 0; i < m->n_units; i++) FSDP_CHECK(!m->units[i]->unreduced);
  struct nn_ctx c = compute_ctx(m), home = home_ctx(m);
  /* Offloaded, the host sums its shards and hands the sum to the device's all-reduce. */
  double *partial = m->streams.host ? &m->host_grad_squares : grad_squares(m);
  device_memset(home.stream, partial, 0, sizeof(double));
  for (int i = 0; i < m->n_units; i++)
    nn_sum_squares(&home, tensor_1d(partial, DTYPE_F64, 1), shard_of(m->units[i], m->units[i]->grad_shard));
  if (m->streams.host) device_copy_to_device(c.stream, grad_squares(m), partial, sizeof(double));
  /* Replicated gradients are already whole on every rank. */
  if (m->strategy != SHARD_NONE) all_reduce_now(m, grad_squares(m), 1, COMM_SUM, "all-reduce grad norm");
}

double fsdp_model_measured_grad_norm(struct fsdp_model *m) {
  struct stream *s = m->streams.compute;
  double sum = 0.0;
  device_copy_to_host(s, &sum, grad_squares(m), sizeof sum);
  stream_synchronize(s);
  return sqrt(sum);
}

double fsdp_model_grad_norm(struct fsdp_model *m) {
  fsdp_model_measure_grad_norm(m);
  return fsdp_model_measured_grad_norm(m);
}

void fsdp_model_clip_grad_norm(struct fsdp_model *m, double max_norm, float unscale) {
  m->grad_scale = TENSOR_NONE;
  if (max_norm <= 0.0 && unscale == 1.0f) return;
  struct nn_ctx home = home_ctx(m);
  double *squares = grad_squares(m);
  float *scale = (float *)(grad_squares(m) + 1);
  if (m->streams.host) { /* the host's AdamW takes a scale in host memory */
    squares = &m->host_grad_squares;
    scale = &m->host_grad_scale;
    device_copy_to_host(m->streams.compute, squares, grad_squares(m), sizeof *squares);
    stream_synchronize(m->streams.compute);
  }
  m->grad_scale = tensor_1d(scale, DTYPE_F32, 1);
  nn_grad_clip_scale(&home, m->grad_scale, tensor_1d(squares, DTYPE_F64, 1), unscale, (float)max_norm);
}

void fsdp_model_zero_grad(struct fsdp_model *m) {
  fsdp_model_wait_for_grads(m);
  m->grad_scale = TENSOR_NONE;
  for (int i = 0; i < m->n_units; i++) m->units[i]->grads_in_shard = 0;
}

/* Each parameter's owned elements in turn: weight decay is a per-parameter choice. */
static void adamw_unit(struct fsdp_model *m, struct fsdp_unit *u, const struct nn_adamw *h) {
  struct nn_ctx c = home_ctx(m);
  struct tensor param = shard_of(u, u->param_shard), grad = shard_of(u, u->grad_shard);
  struct tensor adam_m = shard_of(u, u->adam_m), adam_v = shard_of(u, u->adam_v);
  struct tensor rounded = tensor_1d(u->param_rounded, u->compute_dtype, u->layout.shard);
  for (int p = 0; p < u->layout.n_params; p++) {
    struct sharded_param_info info = fsdp_unit_param_info(u, p);
    size_t o = info.shard_offset, n = info.end - info.begin;
    if (!n) continue;
    struct nn_adamw hp = *h;
    if (!u->layout.params[p].weight_decay) hp.weight_decay = 0.0f;
    nn_adamw(&c, tensor_slice(&param, o, n), u->param_rounded ? tensor_slice(&rounded, o, n) : TENSOR_NONE,
             tensor_slice(&grad, o, n), m->grad_scale, tensor_slice(&adam_m, o, n), tensor_slice(&adam_v, o, n), &hp);
  }
}

void fsdp_model_adamw_step(struct fsdp_model *m, const struct adamw_config *cfg, int step) {
  FSDP_CHECK(step >= 1);
  wait_for_sharded_grads(m);
  double begin = trace_enabled() ? trace_now_us() : 0.0;
  mem_push_context("", "optimizer");
  struct nn_adamw h = {
      .lr = cfg->lr,
      .beta1 = cfg->beta1,
      .beta2 = cfg->beta2,
      .eps = cfg->eps,
      .weight_decay = cfg->weight_decay,
      .bias_correction1 = 1.0f - powf(cfg->beta1, (float)step),
      .bias_correction2_sqrt = sqrtf(1.0f - powf(cfg->beta2, (float)step)),
  };
  /* In forward order, so that the first units' all-gathers for the next step run
   * while the later units are updated. */
  for (int i = 0; i < m->n_units; i++) {
    adamw_unit(m, m->units[i], &h);
    m->units[i]->grads_in_shard = 0;
    fsdp_prefetch_for_next_step(m, m->units[i]);
  }
  m->grad_scale = TENSOR_NONE;
  mem_pop_context();
  if (trace_enabled()) trace_span(trace_track(stream_name(m->streams.compute)), "optimizer", begin, trace_now_us());
}

/* values (n) through the device's metric slots, reduced over every rank in place. */
static void reduce_metrics(struct fsdp_model *m, double *values, int n, enum comm_reduce_op op, const char *label) {
  FSDP_CHECK(n >= 1 && n <= FSDP_METRICS_MAX);
  struct stream *s = m->streams.compute;
  device_copy_to_device(s, m->scalar, values, (size_t)n * sizeof *values);
  all_reduce_everywhere(m, m->scalar, n, op, label);
  device_copy_to_host(s, values, m->scalar, (size_t)n * sizeof *values);
  stream_synchronize(s);
}

double fsdp_model_mean_across_ranks(struct fsdp_model *m, double value) {
  reduce_metrics(m, &value, 1, COMM_AVG, "all-reduce mean");
  return value;
}

double fsdp_model_max_across_ranks(struct fsdp_model *m, double value) {
  reduce_metrics(m, &value, 1, COMM_MAX, "all-reduce max");
  return value;
}

void fsdp_model_max_across_ranks_n(struct fsdp_model *m, double *values, int n) {
  reduce_metrics(m, values, n, COMM_MAX, "all-reduce max");
}

void fsdp_model_take_comm_times(struct fsdp_model *m, struct fsdp_comm_times *out) {
  struct stream_times gather, reduce, compute;
  stream_get_times(m->streams.all_gather, &gather);
  stream_get_times(m->streams.reduce_scatter, &reduce);
  stream_get_times(m->streams.compute, &compute);
  out->all_gather_ms = gather.busy_ms;
  out->reduce_scatter_ms = reduce.busy_ms;
  out->exposed_ms = compute.blocked_ms;
  out->replicate_ms = 0.0;
  if (m->streams.replicate) {
    struct stream_times replicate;
    stream_get_times(m->streams.replicate, &replicate);
    out->replicate_ms = replicate.busy_ms;
    stream_reset_times(m->streams.replicate);
  }
  stream_reset_times(m->streams.all_gather);
  stream_reset_times(m->streams.reduce_scatter);
  stream_reset_times(m->streams.compute);
}

size_t fsdp_model_numel(const struct fsdp_model *m) {
  size_t n = 0;
  for (int i = 0; i < m->n_units; i++) n += m->units[i]->layout.numel;
  return n;
}

size_t fsdp_model_sharded_state_bytes(const struct fsdp_model *m) {
  size_t elements = 0;
  for (int i = 0; i < m->n_units; i++) elements += m->units[i]->layout.shard;
  return 4 * elements * sizeof(float);
}

static int name_index(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

const char *const SHARDING_STRATEGY_NAMES[] = {"full", "grad-op", "none", NULL};
const char *const BACKWARD_PREFETCH_NAMES[] = {"none", "pre", "post", NULL};
const char *const RESHARD_AFTER_FORWARD_NAMES[] = {[RESHARD_AUTO] = "auto", [RESHARD_ALWAYS] = "true",
                                                   [RESHARD_NEVER] = "false", NULL};

const char *sharding_strategy_name(enum sharding_strategy s) { return SHARDING_STRATEGY_NAMES[s]; }
int sharding_strategy_parse(const char *name) { return name_index(SHARDING_STRATEGY_NAMES, 3, name); }
const char *backward_prefetch_name(enum backward_prefetch p) { return BACKWARD_PREFETCH_NAMES[p]; }
