#include "fsdp/unit.h"

#include <stdio.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/rng.h"
#include "fsdp/stream.h"

/* Under SHARD_NONE every rank holds the whole flat parameter: a layout over one rank. */
static int layout_rank(const struct fsdp_unit *u) { return u->strategy == SHARD_NONE ? 0 : u->rank; }

static size_t shard_bytes(const struct fsdp_unit *u) { return u->layout.shard * sizeof(float); }

void fsdp_unit_describe(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs,
                        int n_params, int world_size, enum sharding_strategy strategy, int is_root) {
  memset(u, 0, sizeof *u);
  FSDP_CHECK(strlen(name) < PARAM_NAME_MAX);
  strcpy(u->name, name);
  u->id = id;
  u->is_root = is_root;
  u->strategy = strategy;
  /* The root's parameters are needed again right at the start of the backward
   * (a tied head), so resharding it after forward would only gather it twice. */
  u->reshard_after_forward = strategy == SHARD_FULL && !is_root;
  flat_layout_init(&u->layout, specs, n_params, strategy == SHARD_NONE ? 1 : world_size);
  u->state = UNIT_SHARDED;
}

void fsdp_unit_init(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs, int n_params,
                    struct comm_group *group, const struct fsdp_streams *streams, enum sharding_strategy strategy,
                    int is_root) {
  fsdp_unit_describe(u, name, id, specs, n_params, comm_size(group), strategy, is_root);
  u->group = group;
  u->streams = streams;
  u->rank = comm_rank(group);
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
  fsdp_unit_release_grads(u);
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

/* What a gather in param_dtype needs on the all-gather stream: copies of the
 * unit's fields, which the compute thread goes on changing. */
struct low_precision_gather {
  struct comm_group *group;
  enum dtype dtype;
  const float *shard;
  uint16_t *input;
  float *full;
  size_t shard_numel, padded;
  int replicated;
};

/* The rounded shards land in the upper half of the fp32 buffer and are widened there. */
static void gather_low_precision(void *arg) {
  const struct low_precision_gather *g = arg;
  if (g->replicated) {
    memcpy(g->full, g->shard, g->padded * sizeof(float));
    dtype_round(g->dtype, g->full, g->padded);
    return;
  }
  dtype_pack(g->dtype, g->shard, g->input, g->shard_numel);
  comm_all_gather(g->group, g->input, (uint16_t *)g->full + g->padded, g->shard_numel, comm_dtype_of(g->dtype));
  dtype_unpack_upper_in_place(g->dtype, g->full, g->padded);
}

void fsdp_unit_unshard(struct fsdp_unit *u) {
  if (u->state != UNIT_SHARDED) return;
  int low_precision = u->mp.param_dtype != DTYPE_F32;
  if (!fsdp_unit_owns_param_full(u)) {
    u->param_full = u->param_shard;
    u->state = UNIT_UNSHARDED;
    return;
  }
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of("all-gather", u);
  mem_push_context(u->name, "all-gather");
  /* The all-gather writes straight into the buffer the parameter views point into. */
  u->param_full = mem_alloc_for_overwrite(u->layout.padded * sizeof(float), MEM_UNSHARDED_PARAMS);
  after_compute(u, s->all_gather);
  if (low_precision) {
    int replicated = u->strategy == SHARD_NONE;
    if (!replicated) u->gather_input = mem_alloc_for_overwrite(u->layout.shard * sizeof(uint16_t), MEM_COMM);
    struct low_precision_gather g = {s->all_gather_group, u->mp.param_dtype, u->param_shard,   u->gather_input,
                                     u->param_full,       u->layout.shard,   u->layout.padded, replicated};
    stream_launch(s->all_gather, label.text, gather_low_precision, &g, sizeof g);
  } else {
    comm_all_gather_async(s->all_gather_group, s->all_gather, label.text, u->param_shard, u->param_full,
                          u->layout.shard, COMM_F32);
  }
  mem_pop_context();
  event_record(u->gathered, s->all_gather);
  u->state = UNIT_UNSHARDING;
  if (s->blocking) fsdp_unit_wait_unsharded(u);
}

void fsdp_unit_wait_unsharded(struct fsdp_unit *u) {
  FSDP_CHECK(u->state != UNIT_SHARDED);
  if (u->state == UNIT_UNSHARDING) {
    fsdp_streams_wait(u->streams, u->gathered, label_of("all-gather", u).text);
    mem_push_context(u->name, "all-gather");
    mem_free(u->gather_input);
    mem_pop_context();
    u->gather_input = NULL;
  }
  u->state = UNIT_UNSHARDED;
}

void fsdp_unit_reshard(struct fsdp_unit *u) {
  if (u->state == UNIT_SHARDED) return;
  /* No buffer is freed while a collective may still write it. */
  if (u->state == UNIT_UNSHARDING) fsdp_unit_wait_unsharded(u);
  if (fsdp_unit_owns_param_full(u)) {
    mem_push_context(u->name, "reshard");
    mem_free(u->param_full);
    mem_pop_context();
  }
  u->param_full = NULL;
  u->state = UNIT_SHARDED;
}

void fsdp_unit_begin_grads(struct fsdp_unit *u) {
  /* The unit's last reduction (of an earlier micro-batch) must be over before
   * another one adds to the same grad_shard. */
  fsdp_unit_release_grads(u);
  if (u->strategy == SHARD_NONE) {
    /* DDP keeps one persistent gradient; the kernels accumulate into it. */
    u->grad_full = u->grad_shard;
    if (!u->unreduced && !u->grads_in_shard) memset(u->grad_full, 0, shard_bytes(u));
  } else if (!u->unreduced) {
    FSDP_CHECK(u->grad_full == NULL);
    u->grad_full = mem_alloc(u->layout.padded * sizeof(float), MEM_UNSHARDED_GRADS);
  }
  u->unreduced = 0;
}

void fsdp_unit_keep_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->unreduced);
  u->unreduced = 1;
  if (u->strategy == SHARD_NONE) u->grad_full = NULL;
}

/* A reduction on the reduce-scatter stream, from copies of the unit's fields. */
struct reduction {
  struct comm_group *group;
  struct fsdp_mixed_precision mp;
  float *grad;        /* the unsharded gradients (DDP: reduced in place) */
  float *out;         /* shard_numel floats */
  float *accumulated; /* when not NULL, out is added to it */
  size_t shard_numel, padded;
  int replicated;
};

static void reduce_on_stream(void *arg) {
  const struct reduction *r = arg;
  if (r->mp.param_dtype != DTYPE_F32) dtype_round(r->mp.param_dtype, r->grad, r->padded);
  if (r->replicated) {
    comm_all_reduce(r->group, r->grad, r->shard_numel, COMM_F32, COMM_AVG);
  } else if (r->mp.reduce_dtype == DTYPE_BF16) {
    /* Narrowed in place; the 16-bit result lands in the upper half of out and is widened there. */
    dtype_pack_in_place(DTYPE_BF16, r->grad, r->padded);
    comm_reduce_scatter(r->group, r->grad, (uint16_t *)r->out + r->shard_numel, r->shard_numel, COMM_BF16,
                        COMM_AVG);
    dtype_unpack_upper_in_place(DTYPE_BF16, r->out, r->shard_numel);
  } else {
    /* Each rank's loss is the mean over its own tokens: averaging gives the mean over the global batch. */
    comm_reduce_scatter(r->group, r->grad, r->out, r->shard_numel, COMM_F32, COMM_AVG);
  }
  if (r->accumulated)
    for (size_t i = 0; i < r->shard_numel; i++) r->accumulated[i] += r->out[i];
}

void fsdp_unit_reduce_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->reducing && !u->unreduced);
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of(reduction_name(u), u);
  mem_push_context(u->name, reduction_name(u));
  int replicated = u->strategy == SHARD_NONE;
  struct reduction r = {s->reduce_scatter_group, u->mp, u->grad_full, u->grad_shard, NULL,
                        u->layout.shard,         u->layout.padded, replicated};
  /* A replicated gradient already holds what the last reduction left: the all-reduce
   * of its sum with the new local gradients adds their average to it. */
  if (u->grads_in_shard && !replicated) {
    u->reduce_output = mem_alloc_for_overwrite(shard_bytes(u), MEM_COMM);
    r.out = u->reduce_output;
    r.accumulated = u->grad_shard;
  }
  after_compute(u, s->reduce_scatter);
  stream_launch(s->reduce_scatter, label.text, reduce_on_stream, &r, sizeof r);
  mem_pop_context();
  event_record(u->reduced, s->reduce_scatter);
  if (!replicated) u->grad_reducing = u->grad_full;
  u->grad_full = NULL;
  u->reducing = 1;
  u->grads_in_shard = 1;
  if (s->blocking) fsdp_unit_release_grads(u);
}

void fsdp_unit_release_grads(struct fsdp_unit *u) {
  if (!u->reducing) return;
  fsdp_streams_wait(u->streams, u->reduced, label_of(reduction_name(u), u).text);
  mem_push_context(u->name, reduction_name(u));
  mem_free(u->grad_reducing);
  mem_free(u->reduce_output);
  mem_pop_context();
  u->grad_reducing = NULL;
  u->reduce_output = NULL;
  u->reducing = 0;
}

int fsdp_unit_owns_param_full(const struct fsdp_unit *u) {
  return u->strategy != SHARD_NONE || u->mp.param_dtype != DTYPE_F32;
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
