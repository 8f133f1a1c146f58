#include "model_source.h"

#include "checkpoint.h"
#include "fsdp/device.h"
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

void source_model_open(struct source_model *m, const struct train_options *o, struct comm_group *group, int B, int T,
                       const struct fsdp_mixed_precision *mp) {
  m->device = device_open(device_kind_parse(o->device), DEVICE_CPU);
  fsdp_model_init(&m->fsdp, m->device, group, o->sharding, NULL, mp);
  m->model = o->family->create(&o->config, &m->fsdp, B, T, 0);
  fsdp_model_wrap(&m->fsdp, &FSDP_WRAP_DEFAULT);
  m->source = model_source_fill(o, &m->fsdp);
}

void source_model_close(struct source_model *m, const struct train_options *o) {
  o->family->free(m->model);
  fsdp_model_free(&m->fsdp);
  device_close(m->device);
}
