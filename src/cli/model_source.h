/* Private to src/cli: where a model's parameters come from, for every command that
 * builds one: a training checkpoint, Hugging Face safetensors, or a fresh initialisation. */
#ifndef FSDP_CLI_MODEL_SOURCE_H
#define FSDP_CLI_MODEL_SOURCE_H

#include "fsdp/cli.h"

/* Fills every rank's shards of fsdp, whose units o->family has declared: from
 * --checkpoint's shards, --init-from's safetensors, or a fresh initialisation from --seed. Returns the path
 * they were read from, or NULL for a fresh initialisation. */
const char *model_source_fill(const struct train_options *o, struct fsdp_model *fsdp);
/* model_source_fill, then a log line naming the path read. */
void model_source_load(const struct train_options *o, struct fsdp_model *fsdp);

/* A model of o's family and shape for eval, export and sample: on o's device, sharded
 * over group with o's strategy, wrapped per module, for batches of B x T, its parameters
 * filled by model_source_fill (source: the path read, or NULL). */
struct source_model {
  struct device *device;
  struct fsdp_model fsdp;
  void *model;
  const char *source;
};
void source_model_open(struct source_model *m, const struct train_options *o, struct comm_group *group, int B, int T,
                       const struct fsdp_mixed_precision *mp);
void source_model_close(struct source_model *m, const struct train_options *o);

#endif
