#include "fsdp/unit.h"

#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/rng.h"

/* Under SHARD_NONE every rank holds the whole flat parameter: a layout over one rank. */
static int layout_rank(const struct fsdp_unit *u) { return u->strategy == SHARD_NONE ? 0 : u->rank; }

static size_t shard_bytes(const struct fsdp_unit *u) { return u->layout.shard * sizeof(float); }

void fsdp_unit_init(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs, int n_params,
                    struct comm_group *group, enum sharding_strategy strategy, int reshard_after_forward) {
  memset(u, 0, sizeof *u);
  FSDP_CHECK(strlen(name) < PARAM_NAME_MAX);
  strcpy(u->name, name);
  u->id = id;
  u->strategy = strategy;
  u->reshard_after_forward = strategy == SHARD_FULL && reshard_after_forward;
  u->group = group;
  u->rank = comm_rank(group);
  flat_layout_init(&u->layout, specs, n_params, strategy == SHARD_NONE ? 1 : comm_size(group));
  u->state = UNIT_SHARDED;
  u->param_shard = mem_alloc(shard_bytes(u), MEM_SHARDED_PARAMS);
  u->grad_shard = mem_alloc(shard_bytes(u), MEM_SHARDED_GRADS);
  u->adam_m = mem_alloc(shard_bytes(u), MEM_OPTIMIZER);
  u->adam_v = mem_alloc(shard_bytes(u), MEM_OPTIMIZER);
}

void fsdp_unit_free(struct fsdp_unit *u) {
  fsdp_unit_reshard(u);
  if (u->strategy != SHARD_NONE) mem_free(u->grad_full);
  mem_free(u->param_shard);
  mem_free(u->grad_shard);
  mem_free(u->adam_m);
  mem_free(u->adam_v);
  flat_layout_free(&u->layout);
  memset(u, 0, sizeof *u);
}

/* The init stream of a parameter: (unit id, parameter index), so that the values
 * do not depend on how the parameters are sharded. */
static uint64_t init_stream(const struct fsdp_unit *u, int param) { return ((uint64_t)u->id << 32) | (uint64_t)param; }

void fsdp_unit_init_params(struct fsdp_unit *u, uint64_t seed) {
  for (int p = 0; p < u->layout.n_params; p++) {
    const struct flat_param_entry *e = &u->layout.params[p];
    struct owned_range r = flat_layout_owned(&u->layout, p, layout_rank(u));
    float *dst = u->param_shard + r.shard_offset;
    for (size_t i = r.begin; i < r.end; i++)
      dst[i - r.begin] = e->init == PARAM_INIT_NORMAL ? e->init_value * rng_normal(seed, init_stream(u, p), i)
                                                       : e->init_value;
  }
}

static void unshard(struct fsdp_unit *u) {
  if (u->state == UNIT_UNSHARDED) return;
  if (u->strategy == SHARD_NONE) {
    u->param_full = u->param_shard;
  } else {
    /* The all-gather writes straight into the buffer the parameter views point into. */
    u->param_full = mem_alloc(u->layout.padded * sizeof(float), MEM_UNSHARDED_PARAMS);
    comm_all_gather(u->group, u->param_shard, u->param_full, u->layout.shard, COMM_F32);
  }
  u->state = UNIT_UNSHARDED;
}

void fsdp_unit_reshard(struct fsdp_unit *u) {
  if (u->state == UNIT_SHARDED) return;
  if (u->strategy != SHARD_NONE) mem_free(u->param_full);
  u->param_full = NULL;
  u->state = UNIT_SHARDED;
}

void fsdp_unit_pre_forward(struct fsdp_unit *u) { unshard(u); }

void fsdp_unit_post_forward(struct fsdp_unit *u) {
  if (u->reshard_after_forward) fsdp_unit_reshard(u);
}

void fsdp_unit_pre_backward(struct fsdp_unit *u) {
  unshard(u);
  FSDP_CHECK(u->grad_full == NULL);
  if (u->strategy == SHARD_NONE) {
    /* DDP keeps one persistent gradient; the kernels accumulate into it. */
    u->grad_full = u->grad_shard;
    memset(u->grad_full, 0, shard_bytes(u));
  } else {
    u->grad_full = mem_alloc(u->layout.padded * sizeof(float), MEM_UNSHARDED_GRADS);
  }
}

void fsdp_unit_post_backward(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL);
  if (u->strategy == SHARD_NONE) {
    comm_all_reduce(u->group, u->grad_shard, u->layout.shard, COMM_F32, COMM_AVG);
  } else {
    /* Each rank's loss is the mean over its own tokens: averaging gives the mean over the global batch. */
    comm_reduce_scatter(u->group, u->grad_full, u->grad_shard, u->layout.shard, COMM_F32, COMM_AVG);
    mem_free(u->grad_full);
  }
  u->grad_full = NULL;
  fsdp_unit_reshard(u);
}

float *fsdp_unit_param(struct fsdp_unit *u, int param) {
  FSDP_CHECK(u->state == UNIT_UNSHARDED && param >= 0 && param < u->layout.n_params);
  return u->param_full + u->layout.params[param].offset;
}

float *fsdp_unit_grad(struct fsdp_unit *u, int param) {
  FSDP_CHECK(u->grad_full != NULL && param >= 0 && param < u->layout.n_params);
  return u->grad_full + u->layout.params[param].offset;
}

struct sharded_param_info fsdp_unit_param_info(const struct fsdp_unit *u, int param) {
  FSDP_CHECK(param >= 0 && param < u->layout.n_params);
  const struct flat_param_entry *e = &u->layout.params[param];
  struct owned_range r = flat_layout_owned(&u->layout, param, layout_rank(u));
  struct sharded_param_info info = {
      .name = e->name,
      .ndim = e->ndim,
      .mesh_size = u->layout.world_size,
      .mesh_rank = layout_rank(u),
      .placement = u->strategy == SHARD_NONE ? "Replicate()" : "Shard(0)",
      .begin = r.begin,
      .end = r.end,
      .shard_offset = r.shard_offset,
  };
  memcpy(info.global_shape, e->shape, sizeof info.global_shape);
  return info;
}

void fsdp_unit_gather_params(struct fsdp_unit *u, float *out) {
  if (u->strategy == SHARD_NONE) {
    memcpy(out, u->param_shard, u->layout.numel * sizeof(float));
    return;
  }
  float *full = mem_alloc(u->layout.padded * sizeof(float), MEM_COMM);
  comm_all_gather(u->group, u->param_shard, full, u->layout.shard, COMM_F32);
  memcpy(out, full, u->layout.numel * sizeof(float));
  mem_free(full);
}
