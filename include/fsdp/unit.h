/* An FSDP unit: a group of parameters sharded as one flat parameter, and the
 * hooks that move it between SHARDED and UNSHARDED around its forward and backward. */
#ifndef FSDP_UNIT_H
#define FSDP_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/flat_param.h"

struct comm_group;

enum sharding_strategy {
  SHARD_FULL,    /* ZeRO-3: parameters resharded after forward, gathered again for backward */
  SHARD_GRAD_OP, /* ZeRO-2: parameters kept unsharded from forward until the unit's backward */
  SHARD_NONE     /* DDP: parameters replicated, gradients all-reduced */
};

enum unit_state { UNIT_SHARDED, UNIT_UNSHARDED };

struct fsdp_unit {
  char name[PARAM_NAME_MAX];
  int id; /* position in the model; part of every element's init stream */
  struct flat_layout layout;
  enum sharding_strategy strategy;
  int reshard_after_forward;
  struct comm_group *group;
  int rank;
  enum unit_state state;

  /* Sharded state, layout.shard elements each, alive for the unit's lifetime (fp32). */
  float *param_shard;
  float *grad_shard;
  float *adam_m;
  float *adam_v;

  /* Unsharded buffers, layout.padded elements, alive only between the hooks.
   * Under SHARD_NONE they are the shards themselves. */
  float *param_full;
  float *grad_full;
};

void fsdp_unit_init(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs, int n_params,
                    struct comm_group *group, enum sharding_strategy strategy, int reshard_after_forward);
void fsdp_unit_free(struct fsdp_unit *u);

/* Fills this rank's shard: element i of parameter p is a pure function of (seed, unit id, p, i). */
void fsdp_unit_init_params(struct fsdp_unit *u, uint64_t seed);

/* The hooks: the only places where the state changes. */
void fsdp_unit_pre_forward(struct fsdp_unit *u);
void fsdp_unit_post_forward(struct fsdp_unit *u);
void fsdp_unit_pre_backward(struct fsdp_unit *u);
void fsdp_unit_post_backward(struct fsdp_unit *u);
/* Frees the unsharded parameters (e.g. after an evaluation forward). */
void fsdp_unit_reshard(struct fsdp_unit *u);

/* Views into the unsharded buffers: valid only while UNSHARDED (grad: during backward). */
float *fsdp_unit_param(struct fsdp_unit *u, int param);
float *fsdp_unit_grad(struct fsdp_unit *u, int param);

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

/* The whole of parameter p's flat buffer, gathered from all ranks into out (layout.numel elements). */
void fsdp_unit_gather_params(struct fsdp_unit *u, float *out);

#endif
