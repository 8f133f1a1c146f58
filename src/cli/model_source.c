#include "model_source.h"

#include "checkpoint.h"
#include "fsdp/hf.h"
#include "fsdp/log.h"

const char *model_source_fill(const struct train_options *o, struct fsdp_model *fsdp) {
  if (o->checkpoint) {
    checkpoint_load_weights(o->checkpoint, fsdp);
    return o->checkpoint;
  }
  if (o->init_from) {
    hf_load_params(fsdp, o->family, &o->config, o->init_from);
    return o->init_from;
  }
  fsdp_model_init_params(fsdp, o->seed);
  return NULL;
}

void model_source_load(const struct train_options *o, struct fsdp_model *fsdp) {
  const char *path = model_source_fill(o, fsdp);
  if (path) fsdp_log_info("parameters: from %s", path);
}
