#include "model_source.h"

#include "fsdp/hf.h"
#include "fsdp/log.h"

void model_source_load(const struct train_options *o, struct fsdp_model *fsdp) {
  if (o->init_from) {
    hf_load_params(fsdp, o->family, &o->config, o->init_from);
    fsdp_log_info("parameters: from %s", o->init_from);
  } else {
    fsdp_model_init_params(fsdp, o->seed);
  }
}
