/* An FSDP unit: a group of parameters sharded as one flat parameter, and the
 * hooks that move it between SHARDED and UNSHARDED around its forward and backward. */
#ifndef FSDP_UNIT_H
#define FSDP_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/dtype.h"
#include "fsdp/flat_param.h"
#include "fsdp/tensor.h"

struct comm_group;
struct device;
struct event;
struct stream;

enum sharding_strategy {
  SHARD_FULL,    /* ZeRO-3: parameters resharded after forward, gathered again for backward */
  SHARD_GRAD_OP, /* ZeRO-2: parameters kept unsharded from forward until the unit's backward */
  SHARD_NONE     /* DDP: parameters replicated, gradients all-reduced */
};

/* FSDP's MixedPrecisionPolicy: param_dtype is what the all-gather moves and what
 * the kernels compute from (in the device's compute dtype, nn_compute_dtype: fp32
 * from the rounded values on CPU); gradients are rounded to it too, then reduced in
 * reduce_dtype. The sharded master parameters, gradients and AdamW state stay fp32. */
struct fsdp_mixed_precision {
  enum dtype param_dtype;
  enum dtype reduce_dtype; /* fp32 or bf16 */
};

/* UNSHARDING: the all-gather is launched and may still be writing param_full. */
enum unit_state { UNIT_SHARDED, UNIT_UNSHARDING, UNIT_UNSHARDED };

/* Where units run their work: the device, its compute stream (the caller's thread on
 * CPU), and a stream with a communicator of its own for all-gathers and another for
 * reduce-scatters, so that the two kinds run concurrently without racing on one
 * communicator. Under HSDP a third, with a communicator over the replicas, all-reduces
 * each reduce-scatter's result across them while the next unit's reduce-scatter runs.
 * A model's units share one. */
struct fsdp_streams {
  struct device *device;
  struct stream *compute, *all_gather, *reduce_scatter;
  struct comm_group *all_gather_group, *reduce_scatter_group;
  struct stream *replicate;           /* NULL without replicas */
  struct comm_group *replicate_group; /* NULL without replicas */
  /* CPU offload (FSDP2's CPUOffloadPolicy): the sharded state is in pinned host memory and
   * the work on it (init, grad norm, clipping, AdamW) runs on this stream of a host
   * device: the cpu's, or a meta one planning for it. NULL: no offload. */
  struct stream *host;
  int blocking; /* the compute stream waits for each collective right after launching it */
};

/* group: the ranks parameters are sharded over; replicate: the ranks holding the same
 * shards (HSDP), or NULL (or a group of one) for none. */
void fsdp_streams_init(struct fsdp_streams *s, struct device *device, struct comm_group *group,
                       struct comm_group *replicate);
void fsdp_streams_free(struct fsdp_streams *s);
/* Moves the sharded state of the units made from now on to pinned host memory (s->host). */
void fsdp_streams_offload(struct fsdp_streams *s);
/* The stream that works on the sharded state where it lives: the host's under CPU
 * offload, else the compute stream. Its device is stream_device of it. */
struct stream *fsdp_streams_home(const struct fsdp_streams *s);
/* Blocks the compute stream until e; in a profile trace the wait is a span named
 * "wait <what>" on the compute track. */
void fsdp_streams_wait(const struct fsdp_streams *s, struct event *e, const char *what);

struct fsdp_unit {
  char name[PARAM_NAME_MAX];
  struct flat_layout layout;
  enum sharding_strategy strategy;
  struct comm_group *group;
  const struct fsdp_streams *streams;
  int rank;
  struct fsdp_mixed_precision mp;
  enum dtype compute_dtype; /* of the unsharded buffers: nn_compute_dtype of param_dtype */
  enum unit_state state;

  /* Sharded state, layout.shard elements each, alive for the unit's lifetime (fp32),
   * in the device's memory, or in pinned host memory under CPU offload. */
  float *param_shard;
  float *grad_shard;
  float *adam_m;
  float *adam_v;

  /* Unsharded buffers, layout.padded elements in compute_dtype, alive only between the
   * hooks. Where the shard is the whole flat parameter (SHARD_NONE, or a shard group of
   * one rank) and not offloaded, param_full is param_shard itself, or in 16-bit
   * param_rounded. */
  void *param_full;
  void *grad_full;
  /* The whole shard rounded to compute_dtype, kept for the unit's lifetime, so that an
   * unshard needs neither collective nor cast: AdamW writes it as it updates param_shard;
   * any other write to param_shard marks it stale, and the next unshard rounds it anew.
   * NULL where param_full is not taken from it. */
  void *param_rounded;
  int rounded_stale;
  /* Gradients a launched reduce-scatter may still read; freed once `reduced` is reached. */
  void *grad_reducing;
  int reducing; /* a reduction into grad_shard is launched and not yet waited for */
  /* Gradient accumulation: grad_full holds gradients not reduced yet (no sync), and
   * grad_shard holds reduced ones the optimizer has not used yet (the next reduction adds to them). */
  int unreduced;
  int grads_in_shard;
  /* Comm buffers: param_shard in param_dtype (under CPU offload: its fp32 copy on the
   * device, narrowed in place) while its all-gather runs, and the output of a reduction
   * that is then added to grad_shard (under CPU offload: always, then copied to it). */
  void *gather_input;
  float *reduce_output;

  double compute_begin_us;    /* where the span of the running forward or backward starts in a trace */
  struct event *compute_done; /* the compute stream's point a collective must wait for */
  struct event *gathered, *reduced;
  struct event *scattered; /* HSDP: the reduce-scatter's end, which the all-reduce across replicas waits for */
};

/* The unit's name, place, policies and flat layout, its sharded state (zeroed) on the
 * streams' device and its events. */
void fsdp_unit_init(struct fsdp_unit *u, const char *name, const struct param_spec *specs, int n_params,
                    struct comm_group *group, const struct fsdp_streams *streams, enum sharding_strategy strategy,
                    const struct fsdp_mixed_precision *mp);
void fsdp_unit_free(struct fsdp_unit *u);

/* Fills this rank's shard: element i of parameter p is a pure function of (seed, p's
 * init_stream, i). */
void fsdp_unit_init_params(struct fsdp_unit *u, uint64_t seed);

/* The steps the model's hooks (runtime.h) are made of; they are the only places
 * where the state changes. */
/* SHARDED -> UNSHARDING: allocates param_full and launches its all-gather. */
void fsdp_unit_unshard(struct fsdp_unit *u);
/* -> UNSHARDED: the compute stream waits for the all-gather. */
void fsdp_unit_wait_unsharded(struct fsdp_unit *u);
/* -> SHARDED: frees param_full (after waiting for an all-gather still writing it). */
void fsdp_unit_reshard(struct fsdp_unit *u);
/* A zeroed gradient buffer for the backward (DDP: the persistent gradient), or the
 * one still holding unreduced gradients, which the backward adds to. */
void fsdp_unit_begin_grads(struct fsdp_unit *u);
/* Launches the reduce-scatter (DDP: all-reduce) of the gradients into grad_shard,
 * or adds to grad_shard when it holds gradients the optimizer has not used. */
void fsdp_unit_reduce_grads(struct fsdp_unit *u);
/* Keeps the gradients unreduced for the next backward to add to (no sync). */
void fsdp_unit_keep_grads(struct fsdp_unit *u);
/* Waits for the launched reduction and frees its buffers: grad_shard is final afterwards. */
void fsdp_unit_release_grads(struct fsdp_unit *u);

/* Whether param_full is a buffer of its own, allocated by each unshard (gathered, or a
 * device copy of an offloaded shard), not param_shard or param_rounded. */
int fsdp_unit_owns_param_full(const struct fsdp_unit *u);
/* Views into the unsharded buffers, in the parameter's shape and compute_dtype: valid
 * only while UNSHARDED (grad: during backward). */
struct tensor fsdp_unit_param(struct fsdp_unit *u, int param);
struct tensor fsdp_unit_grad(struct fsdp_unit *u, int param);

/* The C counterpart of a DTensor: how one parameter is sharded and what this rank holds. */
struct sharded_param_info {
  const char *name;
  int ndim;
  size_t global_shape[PARAM_MAX_DIMS];
  int mesh_size;         /* ranks the unit is sharded over (1 under SHARD_NONE) */
  int mesh_rank;
  const char *placement; /* "Shard(0)" of the unit's flat tensor, or "Replicate()" */
  size_t begin, end;     /* the parameter's elements (flattened) this rank owns */
  size_t shard_offset;   /* where they sit in param_shard */
};
struct sharded_param_info fsdp_unit_param_info(const struct fsdp_unit *u, int param);

/* This rank's elements of parameter param, [begin, end) of fsdp_unit_param_info, from
 * host memory into the sharded master parameters, or out of them. The unit is SHARDED. */
void fsdp_unit_write_param_shard(struct fsdp_unit *u, int param, const float *values);
void fsdp_unit_read_param_shard(const struct fsdp_unit *u, int param, float *values);

/* The whole of the unit's flat parameter, gathered from all ranks into host memory out
 * (layout.numel elements). Collective over the unit's group. */
void fsdp_unit_gather_params(struct fsdp_unit *u, float *out);

#endif
