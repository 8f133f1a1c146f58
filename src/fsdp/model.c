#include "fsdp/runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"

void fsdp_model_init(struct fsdp_model *m, struct comm_group *group, enum sharding_strategy strategy) {
  memset(m, 0, sizeof *m);
  m->group = group;
  m->strategy = strategy;
}

void fsdp_model_free(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) {
    fsdp_unit_free(m->units[i]);
    free(m->units[i]);
  }
  m->n_units = 0;
}

struct fsdp_unit *fsdp_model_add_unit(struct fsdp_model *m, const char *name, const struct param_spec *specs,
                                      int n_params, int is_root) {
  if (m->n_units == FSDP_MAX_UNITS) fsdp_fatal("a model may have at most %d units", FSDP_MAX_UNITS);
  struct fsdp_unit *u = fsdp_xmalloc(sizeof *u);
  /* The root's parameters are needed again right at the start of the backward
   * (the tied head), so resharding it after forward would only gather it twice. */
  fsdp_unit_init(u, name, m->n_units, specs, n_params, m->group, m->strategy, !is_root);
  m->units[m->n_units++] = u;
  return u;
}

void fsdp_model_init_params(struct fsdp_model *m, uint64_t seed) {
  for (int i = 0; i < m->n_units; i++) fsdp_unit_init_params(m->units[i], seed);
}

void fsdp_model_reshard_all(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) fsdp_unit_reshard(m->units[i]);
}

/* One parameter's elements in this rank's shards, padding excluded. */
struct owned_run {
  float *param, *grad, *adam_m, *adam_v;
  size_t n;
  int weight_decay;
};

static void for_each_owned_run(struct fsdp_model *m, void (*fn)(const struct owned_run *run, void *ctx),
                               void *ctx) {
  for (int i = 0; i < m->n_units; i++) {
    struct fsdp_unit *u = m->units[i];
    for (int p = 0; p < u->layout.n_params; p++) {
      struct sharded_param_info info = fsdp_unit_param_info(u, p);
      size_t o = info.shard_offset, n = info.end - info.begin;
      struct owned_run run = {u->param_shard + o, u->grad_shard + o, u->adam_m + o, u->adam_v + o, n,
                              u->layout.params[p].weight_decay};
      if (n) fn(&run, ctx);
    }
  }
}

static void add_grad_squares(const struct owned_run *run, void *ctx) {
  double sum = 0.0;
  for (size_t i = 0; i < run->n; i++) sum += (double)run->grad[i] * run->grad[i];
  *(double *)ctx += sum;
}

double fsdp_model_grad_norm(struct fsdp_model *m) {
  double sum = 0.0;
  for_each_owned_run(m, add_grad_squares, &sum);
  /* Replicated gradients are already whole on every rank. */
  if (m->strategy != SHARD_NONE) comm_all_reduce(m->group, &sum, 1, COMM_F64, COMM_SUM);
  return sqrt(sum);
}

static void scale_grads(const struct owned_run *run, void *ctx) {
  float scale = *(float *)ctx;
  for (size_t i = 0; i < run->n; i++) run->grad[i] *= scale;
}

float fsdp_model_clip_grads(struct fsdp_model *m, double norm, double max_norm) {
  if (max_norm <= 0.0 || norm <= max_norm) return 1.0f;
  /* The same epsilon as torch.nn.utils.clip_grad_norm_. */
  float scale = (float)(max_norm / (norm + 1e-6));
  for_each_owned_run(m, scale_grads, &scale);
  return scale;
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
  struct adamw_step_args args = {
      .cfg = cfg,
      .bias_correction1 = 1.0f - powf(cfg->beta1, (float)step),
      .bias_correction2_sqrt = sqrtf(1.0f - powf(cfg->beta2, (float)step)),
  };
  for_each_owned_run(m, adamw_update, &args);
}

double fsdp_model_mean_across_ranks(struct fsdp_model *m, double value) {
  comm_all_reduce(m->group, &value, 1, COMM_F64, COMM_AVG);
  return value;
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

static const char *const strategy_names[] = {"full", "grad-op", "none"};

const char *sharding_strategy_name(enum sharding_strategy s) { return strategy_names[s]; }

int sharding_strategy_parse(const char *name) {
  for (int s = 0; s < 3; s++)
    if (strcmp(name, strategy_names[s]) == 0) return s;
  return -1;
}
