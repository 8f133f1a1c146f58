#include "fsdp/runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dry_run.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"

static const struct fsdp_unit_ops UNIT_OPS = {
    fsdp_unit_unshard,      fsdp_unit_wait_unsharded, fsdp_unit_reshard,       fsdp_unit_begin_grads,
    fsdp_unit_reduce_grads, fsdp_unit_keep_grads,     fsdp_unit_release_grads,
};

/* What a model and a dry run of it share. */
void fsdp_model_init_policies(struct fsdp_model *m, int world_size, enum sharding_strategy strategy,
                              const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp) {
  memset(m, 0, sizeof *m);
  m->world_size = world_size;
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
  m->streams.blocking = m->overlap.blocking;
}

void fsdp_model_init(struct fsdp_model *m, struct comm_group *group, enum sharding_strategy strategy,
                     const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp) {
  fsdp_model_init_policies(m, comm_size(group), strategy, overlap, mp);
  m->ops = &UNIT_OPS;
  m->group = group;
  fsdp_streams_init(&m->streams, group);
  m->streams.blocking = m->overlap.blocking;
  m->collective_done = event_create();
}

void fsdp_model_free(struct fsdp_model *m) {
  if (m->dry_run) {
    fsdp_model_free_dry_run(m);
    return;
  }
  for (int i = 0; i < m->n_units; i++) {
    fsdp_unit_free(m->units[i]);
    free(m->units[i]);
  }
  m->n_units = 0;
  event_destroy(m->collective_done);
  fsdp_streams_free(&m->streams);
}

struct fsdp_unit *fsdp_model_add_unit(struct fsdp_model *m, const char *name, const struct param_spec *specs,
                                      int n_params, int is_root) {
  if (m->n_units == FSDP_MAX_UNITS) fsdp_fatal("a model may have at most %d units", FSDP_MAX_UNITS);
  FSDP_CHECK(!is_root || m->n_units == 0);
  struct fsdp_unit *u = fsdp_xmalloc(sizeof *u);
  if (m->dry_run)
    fsdp_unit_init_dry_run(u, name, m->n_units, specs, n_params, m->world_size, m->strategy, is_root,
                           &m->streams);
  else
    fsdp_unit_init(u, name, m->n_units, specs, n_params, m->group, &m->streams, m->strategy, is_root);
  u->mp = m->mp;
  m->units[m->n_units++] = u;
  return u;
}

void fsdp_model_init_params(struct fsdp_model *m, uint64_t seed) {
  for (int i = 0; i < m->n_units; i++) fsdp_unit_init_params(m->units[i], seed);
}

void fsdp_model_reshard_all(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) m->ops->reshard(m->units[i]);
}

/* One parameter's elements in this rank's shards, padding excluded. */
struct owned_run {
  float *param, *grad, *adam_m, *adam_v;
  size_t n;
  int weight_decay;
};

static void for_each_owned_run_of(struct fsdp_unit *u, void (*fn)(const struct owned_run *run, void *ctx),
                                  void *ctx) {
  for (int p = 0; p < u->layout.n_params; p++) {
    struct sharded_param_info info = fsdp_unit_param_info(u, p);
    size_t o = info.shard_offset, n = info.end - info.begin;
    struct owned_run run = {u->param_shard + o, u->grad_shard + o, u->adam_m + o, u->adam_v + o, n,
                            u->layout.params[p].weight_decay};
    if (n) fn(&run, ctx);
  }
}

static void for_each_owned_run(struct fsdp_model *m, void (*fn)(const struct owned_run *run, void *ctx),
                               void *ctx) {
  for (int i = 0; i < m->n_units; i++) for_each_owned_run_of(m->units[i], fn, ctx);
}

static void add_grad_squares(const struct owned_run *run, void *ctx) {
  double sum = 0.0;
  for (size_t i = 0; i < run->n; i++) sum += (double)run->grad[i] * run->grad[i];
  *(double *)ctx += sum;
}

/* On the reduce-scatter stream, after the gradient reductions, and waited for. */
static void all_reduce_now(struct fsdp_model *m, double *value, enum comm_reduce_op op, const char *label) {
  struct fsdp_streams *s = &m->streams;
  comm_all_reduce_async(s->reduce_scatter_group, s->reduce_scatter, label, value, 1, COMM_F64, op);
  event_record(m->collective_done, s->reduce_scatter);
  fsdp_streams_wait(s, m->collective_done, label);
}

double fsdp_model_grad_norm(struct fsdp_model *m) {
  fsdp_model_wait_for_grads(m);
  for (int i = 0; i < m->n_units; i++) FSDP_CHECK(!m->units[i]->unreduced);
  double sum = 0.0;
  for_each_owned_run(m, add_grad_squares, &sum);
  /* Replicated gradients are already whole on every rank. */
  if (m->strategy != SHARD_NONE) all_reduce_now(m, &sum, COMM_SUM, "all-reduce grad norm");
  return sqrt(sum);
}

static void scale_grads(const struct owned_run *run, void *ctx) {
  float scale = *(float *)ctx;
  for (size_t i = 0; i < run->n; i++) run->grad[i] *= scale;
}

void fsdp_model_scale_grads(struct fsdp_model *m, float scale) {
  fsdp_model_wait_for_grads(m);
  for_each_owned_run(m, scale_grads, &scale);
}

float fsdp_model_clip_grads(struct fsdp_model *m, double norm, double max_norm) {
  if (max_norm <= 0.0 || norm <= max_norm) return 1.0f;
  /* The same epsilon as torch.nn.utils.clip_grad_norm_. */
  float scale = (float)(max_norm / (norm + 1e-6));
  fsdp_model_scale_grads(m, scale);
  return scale;
}

void fsdp_model_zero_grad(struct fsdp_model *m) {
  fsdp_model_wait_for_grads(m);
  for (int i = 0; i < m->n_units; i++) m->units[i]->grads_in_shard = 0;
}

struct adamw_step_args {
  const struct adamw_config *cfg;
  float bias_correction1, bias_correction2_sqrt;
};

/* PyTorch's AdamW:  p -= lr * wd * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 * p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
static void adamw_update(const struct owned_run *run, void *ctx) {
  const struct adamw_step_args *a = ctx;
  const struct adamw_config *c = a->cfg;
  float decay = run->weight_decay ? 1.0f - c->lr * c->weight_decay : 1.0f;
  float step_size = c->lr / a->bias_correction1;
  float *p = run->param, *m = run->adam_m, *v = run->adam_v;
  for (size_t i = 0; i < run->n; i++) {
    float g = run->grad[i];
    p[i] *= decay;
    m[i] = c->beta1 * m[i] + (1.0f - c->beta1) * g;
    v[i] = c->beta2 * v[i] + (1.0f - c->beta2) * g * g;
    p[i] -= step_size * m[i] / (sqrtf(v[i]) / a->bias_correction2_sqrt + c->eps);
  }
}

void fsdp_model_adamw_step(struct fsdp_model *m, const struct adamw_config *cfg, int step) {
  FSDP_CHECK(step >= 1);
  fsdp_model_wait_for_grads(m);
  double begin = trace_enabled() ? trace_now_us() : 0.0;
  mem_push_context("", "optimizer");
  struct adamw_step_args args = {
      .cfg = cfg,
      .bias_correction1 = 1.0f - powf(cfg->beta1, (float)step),
      .bias_correction2_sqrt = sqrtf(1.0f - powf(cfg->beta2, (float)step)),
  };
  /* In forward order, so that the first units' all-gathers for the next step run
   * while the later units are updated. */
  for (int i = 0; i < m->n_units; i++) {
    for_each_owned_run_of(m->units[i], adamw_update, &args);
    m->units[i]->grads_in_shard = 0;
    fsdp_prefetch_for_next_step(m, m->units[i]);
  }
  mem_pop_context();
  if (trace_enabled()) trace_span(trace_track(stream_name(m->streams.compute)), "optimizer", begin, trace_now_us());
}

double fsdp_model_mean_across_ranks(struct fsdp_model *m, double value) {
  all_reduce_now(m, &value, COMM_AVG, "all-reduce mean");
  return value;
}

double fsdp_model_max_across_ranks(struct fsdp_model *m, double value) {
  all_reduce_now(m, &value, COMM_MAX, "all-reduce max");
  return value;
}

void fsdp_model_take_comm_times(struct fsdp_model *m, struct fsdp_comm_times *out) {
  struct stream_times gather, reduce, compute;
  stream_get_times(m->streams.all_gather, &gather);
  stream_get_times(m->streams.reduce_scatter, &reduce);
  stream_get_times(m->streams.compute, &compute);
  out->all_gather_ms = gather.busy_ms;
  out->reduce_scatter_ms = reduce.busy_ms;
  out->exposed_ms = compute.blocked_ms;
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

static const char *const strategy_names[] = {"full", "grad-op", "none"};
static const char *const backward_prefetch_names[] = {"none", "pre", "post"};

const char *sharding_strategy_name(enum sharding_strategy s) { return strategy_names[s]; }
int sharding_strategy_parse(const char *name) { return name_index(strategy_names, 3, name); }
const char *backward_prefetch_name(enum backward_prefetch p) { return backward_prefetch_names[p]; }
int backward_prefetch_parse(const char *name) { return name_index(backward_prefetch_names, 3, name); }
