/* Where a model's parameters come from, for every command that builds one: a training
 * checkpoint, Hugging Face safetensors, or a fresh initialisation. */
#include "checkpointing.h"
#include "fsdp/device.h"
#include "fsdp/hf.h"
#include "fsdp/train.h"
#include "model_source.h"

const char *model_source_fill(const struct model_spec *spec, uint64_t seed, struct fsdp_model *fsdp) {
  if (spec->checkpoint) {
    checkpoint_load_weights(spec->checkpoint, fsdp);
    return spec->checkpoint;
  }
  if (spec->init_from) {
    hf_load_params(fsdp, spec->family, &spec->config, spec->init_from);
    return spec->init_from;
  }
  fsdp_model_init_params(fsdp, seed);
  return NULL;
}

void source_model_open(struct source_model *m, const struct model_spec *spec, uint64_t seed,
                       struct comm_group *group, int B, int T, const struct fsdp_mixed_precision *mp) {
  m->device = device_open(device_kind_parse(spec->device), DEVICE_CPU);
  fsdp_model_init(&m->fsdp, m->device, group, spec->sharding, NULL, mp);
  m->family = spec->family;
  m->model = spec->family->create(&spec->config, &m->fsdp, B, T, 0);
  fsdp_model_wrap(&m->fsdp, &FSDP_WRAP_DEFAULT);
  m->source = model_source_fill(spec, seed, &m->fsdp);
}

void source_model_close(struct source_model *m) {
  m->family->free(m->model);
  fsdp_model_free(&m->fsdp);
  device_close(m->device);
}
