/* A dry run of the runtime: units that count, as planned memory, the bytes the
 * steps of unit.c would allocate and free, in the same order, and the bytes their
 * collectives would move, while the hooks (hooks.c) decide when each step runs
 * exactly as in training. What `fsdp plan` prints comes from here. */
#include <stdlib.h>
#include <string.h>

#include "dry_run.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"

static long long shard_bytes(const struct fsdp_unit *u) { return (long long)(u->layout.shard * sizeof(float)); }
static long long padded_bytes(const struct fsdp_unit *u) { return (long long)(u->layout.padded * sizeof(float)); }

static int low_precision(const struct fsdp_unit *u) { return u->mp.param_dtype != DTYPE_F32; }

/* The model a dry-run unit belongs to: its streams field points into the model. */
static struct fsdp_model *model_of(const struct fsdp_unit *u) {
  return (struct fsdp_model *)((const char *)u->streams - offsetof(struct fsdp_model, streams));
}

/* Bytes one rank sends in a ring collective over W ranks whose per-rank part is
 * `part` bytes: W - 1 parts for an all-gather or a reduce-scatter, twice that for
 * an all-reduce (a reduce-scatter then an all-gather of the whole buffer). */
static double ring_bytes(int world_size, double part) { return (world_size - 1) * part; }

static void dry_wait_unsharded(struct fsdp_unit *u) {
  FSDP_CHECK(u->state != UNIT_SHARDED);
  if (u->state == UNIT_UNSHARDING && low_precision(u) && u->strategy != SHARD_NONE)
    mem_count_planned(MEM_COMM, -(long long)(u->layout.shard * dtype_size(u->mp.param_dtype)));
  u->state = UNIT_UNSHARDED;
}

static void dry_unshard(struct fsdp_unit *u) {
  if (u->state != UNIT_SHARDED) return;
  if (!fsdp_unit_owns_param_full(u)) {
    u->state = UNIT_UNSHARDED;
    return;
  }
  mem_count_planned(MEM_UNSHARDED_PARAMS, padded_bytes(u));
  if (u->strategy != SHARD_NONE) {
    size_t element = dtype_size(u->mp.param_dtype);
    if (low_precision(u)) mem_count_planned(MEM_COMM, (long long)(u->layout.shard * element));
    struct fsdp_model *m = model_of(u);
    m->traffic.all_gather += ring_bytes(m->world_size, (double)(u->layout.shard * element));
  }
  u->state = UNIT_UNSHARDING;
  if (u->streams->blocking) dry_wait_unsharded(u);
}

static void dry_reshard(struct fsdp_unit *u) {
  if (u->state == UNIT_SHARDED) return;
  if (u->state == UNIT_UNSHARDING) dry_wait_unsharded(u);
  if (fsdp_unit_owns_param_full(u)) mem_count_planned(MEM_UNSHARDED_PARAMS, -padded_bytes(u));
  u->state = UNIT_SHARDED;
}

static long long reduce_workspace_bytes(const struct fsdp_unit *u) {
  if (u->strategy == SHARD_NONE) return 0;
  return (long long)comm_reduce_scatter_workspace_bytes(u->layout.world_size, u->layout.shard, comm_dtype_of(u->mp.reduce_dtype));
}

/* The reduce-scatter group keeps its ring workspace at the size of the largest
 * reduction so far (comm_reduce_scatter_workspace_bytes). */
static void count_reduce_workspace(struct fsdp_model *m, const struct fsdp_unit *u) {
  long long bytes = reduce_workspace_bytes(u);
  if (bytes <= m->planned_workspace) return;
  mem_count_planned(MEM_COMM, bytes - m->planned_workspace);
  m->planned_workspace = bytes;
}

static void dry_release_grads(struct fsdp_unit *u) {
  if (!u->reducing) return;
  if (u->strategy != SHARD_NONE) mem_count_planned(MEM_UNSHARDED_GRADS, -padded_bytes(u));
  if (u->reduce_output) mem_count_planned(MEM_COMM, -shard_bytes(u));
  u->reduce_output = NULL;
  u->reducing = 0;
}

static void dry_begin_grads(struct fsdp_unit *u) {
  dry_release_grads(u);
  if (u->strategy != SHARD_NONE && !u->unreduced) mem_count_planned(MEM_UNSHARDED_GRADS, padded_bytes(u));
  u->unreduced = 0;
}

static void dry_keep_grads(struct fsdp_unit *u) { u->unreduced = 1; }

/* reduce_output only marks that a buffer would be held: a dry run never touches it. */
static float reduce_output_marker;

static void dry_reduce_grads(struct fsdp_unit *u) {
  struct fsdp_model *m = model_of(u);
  if (u->strategy == SHARD_NONE) {
    m->traffic.all_reduce += 2 * ring_bytes(m->world_size, (double)shard_bytes(u) / m->world_size);
  } else {
    if (u->grads_in_shard) {
      mem_count_planned(MEM_COMM, shard_bytes(u));
      u->reduce_output = &reduce_output_marker;
    }
    m->traffic.reduce_scatter += ring_bytes(m->world_size, (double)(u->layout.shard * dtype_size(u->mp.reduce_dtype)));
  }
  u->reducing = 1;
  u->grads_in_shard = 1;
  count_reduce_workspace(m, u);
  if (u->streams->blocking) dry_release_grads(u);
}

static const struct fsdp_unit_ops DRY_RUN_OPS = {
    dry_unshard, dry_wait_unsharded, dry_reshard, dry_begin_grads, dry_reduce_grads, dry_keep_grads, dry_release_grads,
};

void fsdp_model_init_dry_run(struct fsdp_model *m, int world_size, enum sharding_strategy strategy,
                             const struct fsdp_overlap *overlap, const struct fsdp_mixed_precision *mp) {
  FSDP_CHECK(world_size >= 1);
  fsdp_model_init_policies(m, world_size, strategy, overlap, mp);
  m->ops = &DRY_RUN_OPS;
  m->dry_run = 1;
}

void fsdp_unit_init_dry_run(struct fsdp_unit *u, const char *name, int id, const struct param_spec *specs,
                            int n_params, int world_size, enum sharding_strategy strategy, int is_root,
                            const struct fsdp_streams *streams) {
  fsdp_unit_describe(u, name, id, specs, n_params, world_size, strategy, is_root);
  u->streams = streams;
  static const enum mem_category sharded_state[] = {MEM_SHARDED_PARAMS, MEM_SHARDED_GRADS, MEM_OPTIMIZER,
                                                    MEM_OPTIMIZER};
  for (int i = 0; i < 4; i++) mem_count_planned(sharded_state[i], shard_bytes(u));
}

void fsdp_model_free_dry_run(struct fsdp_model *m) {
  for (int i = 0; i < m->n_units; i++) {
    flat_layout_free(&m->units[i]->layout);
    free(m->units[i]);
  }
  m->n_units = 0;
}

void fsdp_model_dry_run_optimizer(struct fsdp_model *m) {
  FSDP_CHECK(m->dry_run);
  for (int i = 0; i < m->n_units; i++) {
    m->units[i]->grads_in_shard = 0;
    fsdp_prefetch_for_next_step(m, m->units[i]);
  }
}

void fsdp_model_take_dry_run_traffic(struct fsdp_model *m, struct fsdp_traffic *out) {
  *out = m->traffic;
  memset(&m->traffic, 0, sizeof m->traffic);
}
