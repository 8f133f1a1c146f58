/* What a training configuration resolves to at a world size (train.h). */
#include <stdio.h>

#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/train.h"

void train_config_mesh(const struct train_config *c, int world_size, int *replicate, int *shard) {
  *replicate = c->mesh.replicate ? c->mesh.replicate : 1;
  *shard = c->mesh.shard ? c->mesh.shard : world_size;
  long long ranks = (long long)*replicate * *shard;
  if (ranks != world_size)
    fsdp_fatal("--mesh %d,%d: %d x %d = %lld ranks, but the job has %d", *replicate, *shard, *replicate, *shard,
               ranks, world_size);
}

int train_config_batch_per_rank(const struct train_config *c, int world_size) {
  if (!c->global_batch_size) return c->batch_size;
  int parts = world_size * c->grad_accum;
  if (c->global_batch_size % parts != 0)
    fsdp_fatal("--global-batch-size %d is not divisible by the world size %d times --grad-accum %d",
               c->global_batch_size, world_size, c->grad_accum);
  return c->global_batch_size / parts;
}

const char *const ACCUM_MODE_NAMES[] = {[ACCUM_SHARDED] = "sharded", [ACCUM_NO_SYNC] = "no-sync", NULL};

void train_config_setup_text(const struct train_config *c, int world_size, char out[TRAIN_SETUP_TEXT_MAX]) {
  int replicate, shard;
  train_config_mesh(c, world_size, &replicate, &shard);
  char wrap[32], ac[32];
  if (c->wrap.kind == WRAP_SIZE)
    snprintf(wrap, sizeof wrap, "size:%zu", c->wrap.min_params);
  else
    snprintf(wrap, sizeof wrap, "%s", c->wrap.kind == WRAP_NONE ? "none" : "block");
  if (c->ac_every <= 1)
    snprintf(ac, sizeof ac, "%s", c->ac_every ? "full" : "none");
  else
    snprintf(ac, sizeof ac, "every:%d", c->ac_every);
  snprintf(out, TRAIN_SETUP_TEXT_MAX,
           "--device %s --param-dtype %s --reduce-dtype %s --sharding %s --mesh %d,%d --wrap %s "
           "--reshard-after-forward %s --ac %s --accum-mode %s --prefetch %d --backward-prefetch %s "
           "--max-unsharded %d --overlap %s --offload %s",
           c->model.device, dtype_name(c->mp.param_dtype), dtype_name(c->mp.reduce_dtype),
           sharding_strategy_name(c->model.sharding), replicate, shard, wrap,
           RESHARD_AFTER_FORWARD_NAMES[c->wrap.reshard_after_forward], ac, ACCUM_MODE_NAMES[c->accum_mode],
           c->overlap.prefetch, BACKWARD_PREFETCH_NAMES[c->overlap.backward_prefetch], c->overlap.max_unsharded,
           c->overlap.blocking ? "off" : "on", c->offload_cpu ? "cpu" : "none");
}
