/* What a training configuration resolves to at a world size (train.h). */
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
