#include "fsdp/unit.h"

#include <stdio.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/rng.h"
#include "fsdp/stream.h"

/* Under SHARD_NONE every rank holds the whole flat parameter: a layout over one rank. */
static int layout_rank(const struct fsdp_unit *u) { return u->strategy == SHARD_NONE ? 0 : u->rank; }

static size_t shard_bytes(const struct fsdp_unit *u) { return u->layout.shard * sizeof(float); }

void fsdp_unit_init(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs, int n_params,
                    struct comm_group *group, const struct fsdp_streams *streams, enum sharding_strategy strategy,
                    int is_root) {
  memset(u, 0, sizeof *u);
  FSDP_CHECK(strlen(name) < PARAM_NAME_MAX);
  strcpy(u->name, name);
  u->id = id;
  u->is_root = is_root;
  u->strategy = strategy;
  /* The root's parameters are needed again right at the start of the backward
   * (a tied head), so resharding it after forward would only gather it twice. */
  u->reshard_after_forward = strategy == SHARD_FULL && !is_root;
  u->group = group;
  u->streams = streams;
  u->rank = comm_rank(group);
  flat_layout_init(&u->layout, specs, n_params, strategy == SHARD_NONE ? 1 : comm_size(group));
  u->state = UNIT_SHARDED;
  u->param_shard = mem_alloc(shard_bytes(u), MEM_SHARDED_PARAMS);
  u->grad_shard = mem_alloc(shard_bytes(u), MEM_SHARDED_GRADS);
  u->adam_m = mem_alloc(shard_bytes(u), MEM_OPTIMIZER);
  u->adam_v = mem_alloc(shard_bytes(u), MEM_OPTIMIZER);
  u->compute_done = event_create();
  u->gathered = event_create();
  u->reduced = event_create();
}

void fsdp_unit_free(struct fsdp_unit *u) {
  fsdp_unit_reshard(u);
  fsdp_unit_release_grads(u, 1);
  if (u->strategy != SHARD_NONE) mem_free(u->grad_full);
  mem_free(u->param_shard);
  mem_free(u->grad_shard);
  mem_free(u->adam_m);
  mem_free(u->adam_v);
  event_destroy(u->compute_done);
  event_destroy(u->gathered);
  event_destroy(u->reduced);
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

/* "all-gather block 3": what a collective is called in traces. */
struct label {
  char text[STREAM_LABEL_MAX];
};
static struct label label_of(const char *op, const struct fsdp_unit *u) {
  struct label l;
  snprintf(l.text, sizeof l.text, "%s %s", op, u->name);
  return l;
}

static const char *reduction_name(const struct fsdp_unit *u) {
  return u->strategy == SHARD_NONE ? "all-reduce" : "reduce-scatter";
}

/* A collective on another stream must not start before the compute stream's work
 * so far (the optimizer's update, the backward's gradients): free on CPU, where
 * the compute stream is the caller, and needed on a GPU. */
static void after_compute(struct fsdp_unit *u, struct stream *comm) {
  event_record(u->compute_done, u->streams->compute);
  stream_wait_event(comm, u->compute_done);
}

void fsdp_unit_unshard(struct fsdp_unit *u) {
  if (u->state != UNIT_SHARDED) return;
  if (u->strategy == SHARD_NONE) {
    u->param_full = u->param_shard;
    u->state = UNIT_UNSHARDED;
    return;
  }
  const struct fsdp_streams *s = u->streams;
  /* The all-gather writes straight into the buffer the parameter views point into. */
  u->param_full = mem_alloc_for_overwrite(u->layout.padded * sizeof(float), MEM_UNSHARDED_PARAMS);
  after_compute(u, s->all_gather);
  comm_all_gather_async(s->all_gather_group, s->all_gather, label_of("all-gather", u).text, u->param_shard,
                        u->param_full, u->layout.shard, COMM_F32);
  event_record(u->gathered, s->all_gather);
  u->state = UNIT_UNSHARDING;
  if (s->blocking) fsdp_unit_wait_unsharded(u);
}

void fsdp_unit_wait_unsharded(struct fsdp_unit *u) {
  FSDP_CHECK(u->state != UNIT_SHARDED);
  if (u->state == UNIT_UNSHARDING) fsdp_streams_wait(u->streams, u->gathered, label_of("all-gather", u).text);
  u->state = UNIT_UNSHARDED;
}

void fsdp_unit_reshard(struct fsdp_unit *u) {
  if (u->state == UNIT_SHARDED) return;
  /* No buffer is freed while a collective may still write it. */
  if (u->state == UNIT_UNSHARDING) fsdp_unit_wait_unsharded(u);
  if (u->strategy != SHARD_NONE) mem_free(u->param_full);
  u->param_full = NULL;
  u->state = UNIT_SHARDED;
}

void fsdp_unit_begin_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full == NULL);
  if (u->strategy == SHARD_NONE) {
    /* DDP keeps one persistent gradient; the kernels accumulate into it. Its last
     * all-reduce must be over before it is zeroed. */
    fsdp_unit_release_grads(u, 1);
    u->grad_full = u->grad_shard;
    memset(u->grad_full, 0, shard_bytes(u));
  } else {
    u->grad_full = mem_alloc(u->layout.padded * sizeof(float), MEM_UNSHARDED_GRADS);
  }
}

void fsdp_unit_reduce_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->reducing);
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of(reduction_name(u), u);
  after_compute(u, s->reduce_scatter);
  if (u->strategy == SHARD_NONE) {
    comm_all_reduce_async(s->reduce_scatter_group, s->reduce_scatter, label.text, u->grad_shard, u->layout.shard,
                          COMM_F32, COMM_AVG);
  } else {
    /* Each rank's loss is the mean over its own tokens: averaging gives the mean over the global batch. */
    comm_reduce_scatter_async(s->reduce_scatter_group, s->reduce_scatter, label.text, u->grad_full, u->grad_shard,
                              u->layout.shard, COMM_F32, COMM_AVG);
    u->grad_reducing = u->grad_full;
  }
  event_record(u->reduced, s->reduce_scatter);
  u->grad_full = NULL;
  u->reducing = 1;
  if (s->blocking) fsdp_unit_release_grads(u, 1);
}

void fsdp_unit_release_grads(struct fsdp_unit *u, int wait) {
  if (!u->reducing) return;
  if (wait) {
    fsdp_streams_wait(u->streams, u->reduced, label_of(reduction_name(u), u).text);
  } else if (!event_query(u->reduced)) {
    return;
  }
  mem_free(u->grad_reducing);
  u->grad_reducing = NULL;
  u->reducing = 0;
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
