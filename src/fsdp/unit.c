#include "fsdp/unit.h"

#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "unit_private.h"

/* Under SHARD_NONE every rank holds the whole flat parameter: a layout over one rank. */
static int layout_rank(const struct fsdp_unit *u) { return u->strategy == SHARD_NONE ? 0 : u->rank; }

/* The shard is the whole flat parameter: replicated, or sharded over a group of one rank. */
static int shard_is_whole(const struct fsdp_unit *u) { return u->layout.shard == u->layout.padded; }

/* Where the sharded state lives and is worked on. */
static struct nn_ctx home_ctx(const struct fsdp_unit *u) {
  struct stream *home = fsdp_streams_home(u->streams);
  return (struct nn_ctx){stream_device(home), home};
}

/* A block of the sharded state, zeroed: padding stays zero in every one of them. */
static float *sharded_buffer(struct fsdp_unit *u, enum mem_category category) {
  struct nn_ctx home = home_ctx(u);
  float *buffer = offloaded(u) ? device_alloc_pinned(device_of(u), shard_bytes(u), category)
                               : device_alloc(device_of(u), shard_bytes(u), category, home.stream);
  device_memset(home.stream, buffer, 0, shard_bytes(u));
  return buffer;
}

static void free_sharded(struct fsdp_unit *u, float *buffer) {
  if (offloaded(u))
    device_free_pinned(device_of(u), buffer);
  else
    device_free(device_of(u), buffer, u->streams->compute);
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
  /* One dtype contract on every device (../shared/DESIGN.md, "Kernels"): the kernels
   * compute in the param dtype, so the gathered parameters and the unsharded gradients
   * are in it. */
  FSDP_CHECK(u->compute_dtype == mp->param_dtype);
  flat_layout_init(&u->layout, specs, n_params, strategy == SHARD_NONE ? 1 : comm_size(group));
  u->state = UNIT_SHARDED;
  u->param_shard = sharded_buffer(u, MEM_SHARDED_PARAMS);
  u->grad_shard = sharded_buffer(u, MEM_SHARDED_GRADS);
  u->adam_m = sharded_buffer(u, MEM_OPTIMIZER);
  u->adam_v = sharded_buffer(u, MEM_OPTIMIZER);
  if (!fsdp_unit_owns_param_full(u) && u->compute_dtype != DTYPE_F32) {
    struct nn_ctx home = home_ctx(u);
    u->param_rounded = device_alloc(device_of(u), full_bytes(u), MEM_UNSHARDED_PARAMS, home.stream);
    u->rounded_stale = 1;
  }
  u->compute_done = event_create(streams->device);
  u->gathered = event_create(streams->device);
  u->reduced = event_create(streams->device);
  u->scattered = event_create(streams->device);
}

void fsdp_unit_free(struct fsdp_unit *u) {
  fsdp_unit_reshard(u);
  fsdp_unit_free_grads(u);
  free_sharded(u, u->param_shard);
  free_sharded(u, u->grad_shard);
  free_sharded(u, u->adam_m);
  free_sharded(u, u->adam_v);
  if (u->param_rounded) device_free(device_of(u), u->param_rounded, u->streams->compute);
  event_destroy(u->compute_done);
  event_destroy(u->gathered);
  event_destroy(u->reduced);
  event_destroy(u->scattered);
  flat_layout_free(&u->layout);
  memset(u, 0, sizeof *u);
}

void fsdp_unit_init_params(struct fsdp_unit *u, uint64_t seed) {
  struct nn_ctx c = home_ctx(u);
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
  u->rounded_stale = 1;
}

/* The fp32 shard on the device, for the all-gather stream: param_shard itself, or under
 * CPU offload its copy made on that stream into gather_input (freed once the gather is
 * waited for). */
static float *shard_on_device(struct fsdp_unit *u) {
  if (!offloaded(u)) return u->param_shard;
  struct stream *s = u->streams->all_gather;
  u->gather_input = device_alloc(device_of(u), shard_bytes(u), MEM_COMM, s);
  device_copy_to_device(s, u->gather_input, u->param_shard, shard_bytes(u));
  return u->gather_input;
}

/* An offloaded whole shard is brought to the device, cast to the 16-bit dtype the kernels
 * compute in or copied, with no collective, which would only copy it again. */
static void copy_whole_shard(struct fsdp_unit *u) {
  struct stream *s = u->streams->all_gather;
  struct nn_ctx c = ctx_on(u, s);
  if (u->compute_dtype != DTYPE_F32)
    nn_cast(&c, tensor_1d(u->param_full, u->compute_dtype, u->layout.padded), shard_tensor(u, shard_on_device(u)));
  else
    device_copy_to_device(s, u->param_full, u->param_shard, shard_bytes(u));
}

/* A whole shard's parameters as the kernels read them: the shard itself (fp32), or
 * param_rounded, rounded anew if param_shard was written since AdamW last wrote it. */
static void *whole_params(struct fsdp_unit *u) {
  if (!u->param_rounded) return u->param_shard;
  if (u->rounded_stale) {
    struct nn_ctx home = home_ctx(u);
    nn_cast(&home, tensor_1d(u->param_rounded, u->compute_dtype, u->layout.padded), shard_tensor(u, u->param_shard));
    u->rounded_stale = 0;
  }
  return u->param_rounded;
}

/* The 16-bit gather: the shard is narrowed into gather_input and gathered (half the
 * bytes) into the unsharded buffer, in the dtype the kernels compute in. */
static void gather_low_precision(struct fsdp_unit *u, const char *label) {
  const struct fsdp_streams *s = u->streams;
  struct nn_ctx c = ctx_on(u, s->all_gather);
  enum dtype pd = u->mp.param_dtype;
  float *shard = shard_on_device(u);
  /* Offloaded, the shard's device copy is narrowed in place. */
  if (!u->gather_input)
    u->gather_input = device_alloc(device_of(u), u->layout.shard * dtype_size(pd), MEM_COMM, s->all_gather);
  nn_cast(&c, tensor_1d(u->gather_input, pd, u->layout.shard), shard_tensor(u, shard));
  comm_all_gather_async(s->all_gather_group, s->all_gather, label, u->gather_input, u->param_full, u->layout.shard,
                        comm_dtype_of(pd));
}

void fsdp_unit_unshard(struct fsdp_unit *u) {
  if (u->state != UNIT_SHARDED) return;
  if (!fsdp_unit_owns_param_full(u)) {
    u->param_full = whole_params(u);
    u->state = UNIT_UNSHARDED;
    return;
  }
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of("all-gather", u);
  mem_push_context(u->name, "all-gather");
  /* The all-gather writes straight into the buffer the parameter views point into. */
  u->param_full = device_alloc(device_of(u), full_bytes(u), MEM_UNSHARDED_PARAMS, s->all_gather);
  after_compute(u, s->all_gather);
  if (shard_is_whole(u))
    copy_whole_shard(u);
  else if (u->mp.param_dtype != DTYPE_F32)
    gather_low_precision(u, label.text);
  else
    comm_all_gather_async(s->all_gather_group, s->all_gather, label.text, shard_on_device(u), u->param_full,
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

int fsdp_unit_owns_param_full(const struct fsdp_unit *u) { return !shard_is_whole(u) || offloaded(u); }

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
  struct stream *home = fsdp_streams_home(u->streams);
  device_copy_to_host(home, shard, u->param_shard, shard_bytes(u));
  stream_synchronize(home);
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
