#include "fsdp/unit.h"

#include <stdio.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"

/* Under SHARD_NONE every rank holds the whole flat parameter: a layout over one rank. */
static int layout_rank(const struct fsdp_unit *u) { return u->strategy == SHARD_NONE ? 0 : u->rank; }

static size_t shard_bytes(const struct fsdp_unit *u) { return u->layout.shard * sizeof(float); }
static size_t full_bytes(const struct fsdp_unit *u) { return u->layout.padded * dtype_size(u->compute_dtype); }

static struct device *device_of(const struct fsdp_unit *u) { return u->streams->device; }

static struct nn_ctx ctx_on(const struct fsdp_unit *u, struct stream *s) {
  return (struct nn_ctx){device_of(u), s};
}

static struct tensor shard_tensor(const struct fsdp_unit *u, float *shard) {
  return tensor_1d(shard, DTYPE_F32, u->layout.shard);
}

/* A block of the sharded state, zeroed: padding stays zero in every one of them. */
static float *sharded_buffer(struct fsdp_unit *u, enum mem_category category) {
  float *buffer = device_alloc(device_of(u), shard_bytes(u), category, u->streams->compute);
  device_memset(u->streams->compute, buffer, 0, shard_bytes(u));
  return buffer;
}

void fsdp_unit_init(struct fsdp_unit *u, const char *name, const struct param_spec *specs, int n_params,
                    struct comm_group *group, const struct fsdp_streams *streams, enum sharding_strategy strategy,
                    const struct fsdp_mixed_precision *mp) {
  memset(u, 0, sizeof *u);
  FSDP_CHECK(strlen(name) < PARAM_NAME_MAX);
  strcpy(u->name, name);
  u->strategy = strategy;
  u->group = group;
  u->streams = streams;
  u->rank = comm_rank(group);
  u->mp = *mp;
  u->compute_dtype = nn_compute_dtype(streams->device, mp->param_dtype);
  flat_layout_init(&u->layout, specs, n_params, strategy == SHARD_NONE ? 1 : comm_size(group));
  u->state = UNIT_SHARDED;
  u->param_shard = sharded_buffer(u, MEM_SHARDED_PARAMS);
  u->grad_shard = sharded_buffer(u, MEM_SHARDED_GRADS);
  u->adam_m = sharded_buffer(u, MEM_OPTIMIZER);
  u->adam_v = sharded_buffer(u, MEM_OPTIMIZER);
  u->compute_done = event_create(streams->device);
  u->gathered = event_create(streams->device);
  u->reduced = event_create(streams->device);
  u->scattered = event_create(streams->device);
}

void fsdp_unit_free(struct fsdp_unit *u) {
  fsdp_unit_reshard(u);
  fsdp_unit_release_grads(u);
  struct device *d = device_of(u);
  struct stream *compute = u->streams->compute;
  if (u->strategy != SHARD_NONE) device_free(d, u->grad_full, compute);
  device_free(d, u->param_shard, compute);
  device_free(d, u->grad_shard, compute);
  device_free(d, u->adam_m, compute);
  device_free(d, u->adam_v, compute);
  event_destroy(u->compute_done);
  event_destroy(u->gathered);
  event_destroy(u->reduced);
  event_destroy(u->scattered);
  flat_layout_free(&u->layout);
  memset(u, 0, sizeof *u);
}

void fsdp_unit_init_params(struct fsdp_unit *u, uint64_t seed) {
  struct nn_ctx c = ctx_on(u, u->streams->compute);
  struct tensor shard = shard_tensor(u, u->param_shard);
  for (int p = 0; p < u->layout.n_params; p++) {
    const struct flat_param_entry *e = &u->layout.params[p];
    struct owned_range r = flat_layout_owned(&u->layout, p, layout_rank(u));
    if (r.end == r.begin) continue;
    struct tensor owned = tensor_slice(&shard, r.shard_offset, r.end - r.begin);
    switch (e->init) {
      case PARAM_INIT_NORMAL: nn_init_normal(&c, owned, seed, e->init_stream, r.begin, e->init_value); break;
      case PARAM_INIT_TRUNC_NORMAL:
        nn_init_trunc_normal(&c, owned, seed, e->init_stream, r.begin, e->init_value, e->init_bound);
        break;
      case PARAM_INIT_CONSTANT: nn_fill(&c, owned, e->init_value); break;
    }
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

/* The 16-bit gather: the shard is narrowed into gather_input and gathered (half the
 * bytes). Where the kernels compute in fp32 the result lands in the upper half of the
 * fp32 unsharded buffer and is widened there; otherwise it is the unsharded buffer. */
static void gather_low_precision(struct fsdp_unit *u, const char *label) {
  const struct fsdp_streams *s = u->streams;
  struct nn_ctx c = ctx_on(u, s->all_gather);
  enum dtype pd = u->mp.param_dtype;
  size_t padded = u->layout.padded;
  struct tensor full = tensor_1d(u->param_full, u->compute_dtype, padded);
  if (u->strategy == SHARD_NONE) {
    device_copy(s->all_gather, u->param_full, u->param_shard, padded * sizeof(float));
    nn_round(&c, full, pd);
    return;
  }
  u->gather_input = device_alloc(device_of(u), u->layout.shard * dtype_size(pd), MEM_COMM, s->all_gather);
  nn_cast(&c, tensor_1d(u->gather_input, pd, u->layout.shard), shard_tensor(u, u->param_shard));
  int widen = u->compute_dtype != pd;
  void *gathered = widen ? (char *)u->param_full + padded * dtype_size(pd) : u->param_full;
  comm_all_gather_async(s->all_gather_group, s->all_gather, label, u->gather_input, gathered, u->layout.shard,
                        comm_dtype_of(pd));
  if (widen) nn_cast(&c, full, tensor_1d(gathered, pd, padded));
}

void fsdp_unit_unshard(struct fsdp_unit *u) {
  if (u->state != UNIT_SHARDED) return;
  if (!fsdp_unit_owns_param_full(u)) {
    u->param_full = u->param_shard;
    u->state = UNIT_UNSHARDED;
    return;
  }
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of("all-gather", u);
  mem_push_context(u->name, "all-gather");
  /* The all-gather writes straight into the buffer the parameter views point into. */
  u->param_full = device_alloc(device_of(u), full_bytes(u), MEM_UNSHARDED_PARAMS, s->all_gather);
  after_compute(u, s->all_gather);
  if (u->mp.param_dtype != DTYPE_F32)
    gather_low_precision(u, label.text);
  else
    comm_all_gather_async(s->all_gather_group, s->all_gather, label.text, u->param_shard, u->param_full,
                          u->layout.shard, COMM_F32);
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
    device_free(device_of(u), u->gather_input, u->streams->compute);
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
    device_free(device_of(u), u->param_full, u->streams->compute);
    mem_pop_context();
  }
  u->param_full = NULL;
  u->state = UNIT_SHARDED;
}

void fsdp_unit_begin_grads(struct fsdp_unit *u) {
  /* The unit's last reduction (of an earlier micro-batch) must be over before
   * another one adds to the same grad_shard. */
  fsdp_unit_release_grads(u);
  struct stream *compute = u->streams->compute;
  if (u->strategy == SHARD_NONE) {
    /* DDP keeps one persistent gradient; the kernels accumulate into it. */
    u->grad_full = u->grad_shard;
    if (!u->unreduced && !u->grads_in_shard) device_memset(compute, u->grad_full, 0, shard_bytes(u));
  } else if (!u->unreduced) {
    FSDP_CHECK(u->grad_full == NULL);
    u->grad_full = device_alloc(device_of(u), full_bytes(u), MEM_UNSHARDED_GRADS, compute);
    device_memset(compute, u->grad_full, 0, full_bytes(u));
  }
  u->unreduced = 0;
}

void fsdp_unit_keep_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->unreduced);
  u->unreduced = 1;
  if (u->strategy == SHARD_NONE) u->grad_full = NULL;
}

/* On the reduce-scatter stream: the gradients are rounded to the param dtype (in
 * PyTorch they are in it), then reduced into out, averaged (each rank's loss is the
 * mean over its own tokens: averaging gives the mean over the global batch). */
static void launch_reduction(struct fsdp_unit *u, const char *label, float *out) {
  const struct fsdp_streams *s = u->streams;
  struct nn_ctx c = ctx_on(u, s->reduce_scatter);
  size_t shard = u->layout.shard, padded = u->layout.padded;
  struct tensor grad = tensor_1d(u->grad_full, DTYPE_F32, padded);
  if (u->mp.param_dtype != DTYPE_F32) nn_round(&c, grad, u->mp.param_dtype);
  if (u->strategy == SHARD_NONE) {
    comm_all_reduce_async(s->reduce_scatter_group, s->reduce_scatter, label, u->grad_full, shard, COMM_F32, COMM_AVG);
  } else if (u->mp.reduce_dtype == DTYPE_BF16) {
    /* Narrowed in place; the 16-bit result lands in the upper half of out and is widened there. */
    nn_cast(&c, tensor_1d(u->grad_full, DTYPE_BF16, padded), grad);
    uint16_t *result = (uint16_t *)out + shard;
    comm_reduce_scatter_async(s->reduce_scatter_group, s->reduce_scatter, label, u->grad_full, result, shard,
                              COMM_BF16, COMM_AVG);
    nn_cast(&c, tensor_1d(out, DTYPE_F32, shard), tensor_1d(result, DTYPE_BF16, shard));
  } else {
    comm_reduce_scatter_async(s->reduce_scatter_group, s->reduce_scatter, label, u->grad_full, out, shard, COMM_F32,
                              COMM_AVG);
  }
}

void fsdp_unit_reduce_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->reducing && !u->unreduced);
  FSDP_CHECK(u->compute_dtype == DTYPE_F32); /* 16-bit gradient buffers come with the GPU's kernels */
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of(reduction_name(u), u);
  mem_push_context(u->name, reduction_name(u));
  int replicated = u->strategy == SHARD_NONE;
  after_compute(u, s->reduce_scatter);
  /* A replicated gradient already holds what the last reduction left: the all-reduce
   * of its sum with the new local gradients adds their average to it. */
  float *out = u->grad_shard;
  if (u->grads_in_shard && !replicated) {
    u->reduce_output = device_alloc(device_of(u), shard_bytes(u), MEM_COMM, s->reduce_scatter);
    out = u->reduce_output;
  }
  launch_reduction(u, label.text, out);
  struct stream *last = s->reduce_scatter;
  if (s->replicate && !replicated) {
    /* HSDP: the shard group's average, averaged again across the replicas, is the
     * average over every rank; on a stream of its own, so that the next unit's
     * reduce-scatter does not wait for it. */
    event_record(u->scattered, s->reduce_scatter);
    stream_wait_event(s->replicate, u->scattered);
    struct label across = label_of("replicate all-reduce", u);
    comm_all_reduce_async(s->replicate_group, s->replicate, across.text, out, u->layout.shard, COMM_F32, COMM_AVG);
    last = s->replicate;
  }
  if (out != u->grad_shard) {
    struct nn_ctx c = ctx_on(u, last);
    nn_add(&c, shard_tensor(u, u->grad_shard), shard_tensor(u, out));
  }
  mem_pop_context();
  event_record(u->reduced, last);
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
  device_free(device_of(u), u->grad_reducing, u->streams->compute);
  device_free(device_of(u), u->reduce_output, u->streams->compute);
  mem_pop_context();
  u->grad_reducing = NULL;
  u->reduce_output = NULL;
  u->reducing = 0;
}

int fsdp_unit_owns_param_full(const struct fsdp_unit *u) {
  return u->strategy != SHARD_NONE || u->mp.param_dtype != DTYPE_F32;
}

static struct tensor view(const struct fsdp_unit *u, void *full, int param) {
  const struct flat_param_entry *e = &u->layout.params[param];
  struct tensor t = {(char *)full + e->offset * dtype_size(u->compute_dtype), u->compute_dtype, e->ndim, {0}};
  memcpy(t.shape, e->shape, sizeof t.shape);
  return t;
}

struct tensor fsdp_unit_param(struct fsdp_unit *u, int param) {
  FSDP_CHECK(u->state == UNIT_UNSHARDED && param >= 0 && param < u->layout.n_params);
  return view(u, u->param_full, param);
}

struct tensor fsdp_unit_grad(struct fsdp_unit *u, int param) {
  FSDP_CHECK(u->grad_full != NULL && param >= 0 && param < u->layout.n_params);
  return view(u, u->grad_full, param);
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

/* Through host memory: the blocking collectives move host buffers. */
void fsdp_unit_gather_params(struct fsdp_unit *u, float *out) {
  struct device *cpu = device_cpu();
  float *shard = device_alloc(cpu, shard_bytes(u), MEM_COMM, NULL);
  device_copy_to_host(u->streams->compute, shard, u->param_shard, shard_bytes(u));
  stream_synchronize(u->streams->compute);
  if (u->strategy == SHARD_NONE) {
    memcpy(out, shard, u->layout.numel * sizeof(float));
  } else {
    float *full = device_alloc(cpu, u->layout.padded * sizeof(float), MEM_COMM, NULL);
    comm_all_gather(u->group, shard, full, u->layout.shard, COMM_F32);
    memcpy(out, full, u->layout.numel * sizeof(float));
    device_free(cpu, full, NULL);
  }
  device_free(cpu, shard, NULL);
}
