/* Private to src/train: the parameters of a model the trainer makes (model_source.c). */
#ifndef FSDP_TRAIN_MODEL_SOURCE_H
#define FSDP_TRAIN_MODEL_SOURCE_H

#include <stdint.h>

#include "fsdp/train.h"

/* Fills every rank's shards of fsdp, whose units spec's family has declared: from spec's
 * checkpoint, its init_from safetensors, or a fresh initialisation from seed. Returns the
 * path they were read from, or NULL for a fresh initialisation. */
const char *model_source_fill(const struct model_spec *spec, uint64_t seed, struct fsdp_model *fsdp);

#endif
