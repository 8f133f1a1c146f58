/* Private to src/cli: where a model's parameters come from, for every command that
 * builds one. */
#ifndef FSDP_CLI_MODEL_SOURCE_H
#define FSDP_CLI_MODEL_SOURCE_H

#include "fsdp/cli.h"

/* Fills every rank's shards of fsdp, whose units o->family has declared: from
 * --init-from's safetensors, or a fresh initialisation from --seed. */
void model_source_load(const struct train_options *o, struct fsdp_model *fsdp);

#endif
