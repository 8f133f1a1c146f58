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

#endif
