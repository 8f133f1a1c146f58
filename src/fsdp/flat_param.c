#include "fsdp/flat_param.h"

#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

void flat_layout_init(struct flat_layout *layout, const struct param_spec *specs, int n_params, int world_size) {
  FSDP_CHECK(n_params > 0 && world_size > 0);
  memset(layout, 0, sizeof *layout);
  layout->n_params = n_params;
  layout->world_size = world_size;
  layout->params = fsdp_xcalloc((size_t)n_params, sizeof *layout->params);
  size_t offset = 0;
  for (int p = 0; p < n_params; p++) {
    const struct param_spec *s = &specs[p];
    struct flat_param_entry *e = &layout->params[p];
    FSDP_CHECK(s->ndim >= 1 && s->ndim <= PARAM_MAX_DIMS && strlen(s->name) < PARAM_NAME_MAX);
    FSDP_CHECK(s->init != PARAM_INIT_TRUNC_NORMAL || (s->init_value > 0.0f && s->init_bound >= s->init_value));
    strcpy(e->name, s->name);
    e->ndim = s->ndim;
    e->numel = 1;
    for (int d = 0; d < s->ndim; d++) {
      e->shape[d] = s->shape[d];
      e->numel *= s->shape[d];
    }
    e->init = s->init;
    e->init_value = s->init_value;
    e->weight_decay = s->weight_decay;
    e->init_bound = s->init_bound;
    e->offset = offset;
    offset += e->numel;
  }
  layout->numel = offset;
  size_t granule = (size_t)world_size * FLAT_ALIGN;
  layout->padded = (offset + granule - 1) / granule * granule;
  layout->shard = layout->padded / (size_t)world_size;
}

void flat_layout_free(struct flat_layout *layout) {
  free(layout->params);
  layout->params = NULL;
}

struct owned_range flat_layout_owned(const struct flat_layout *layout, int param, int rank) {
  FSDP_CHECK(param >= 0 && param < layout->n_params && rank >= 0 && rank < layout->world_size);
  const struct flat_param_entry *e = &layout->params[param];
  size_t shard_begin = (size_t)rank * layout->shard, shard_end = shard_begin + layout->shard;
  size_t begin = e->offset > shard_begin ? e->offset : shard_begin;
  size_t end = e->offset + e->numel < shard_end ? e->offset + e->numel : shard_end;
  struct owned_range r = {0, 0, 0};
  if (begin < end) {
    r.begin = begin - e->offset;
    r.end = end - e->offset;
    r.shard_offset = begin - shard_begin;
  }
  return r;
}
