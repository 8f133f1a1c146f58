/* The flat parameter: a unit's parameters packed in order into one buffer of
 * `numel` elements, padded to `padded` = world_size * shard so that rank r owns
 * the contiguous slice [r * shard, (r + 1) * shard). shard is a multiple of
 * FLAT_ALIGN elements so that every rank's slice starts aligned. */
#ifndef FSDP_FLAT_PARAM_H
#define FSDP_FLAT_PARAM_H

#include <stddef.h>
#include <stdint.h>

enum { FLAT_ALIGN = 16, PARAM_MAX_DIMS = 4, PARAM_NAME_MAX = 64 };

/* Normal (mean 0, std init_value), truncated normal (the same, resampled until within
 * [-init_bound, init_bound]: rng_trunc_normal) or the constant init_value. */
enum param_init { PARAM_INIT_NORMAL, PARAM_INIT_TRUNC_NORMAL, PARAM_INIT_CONSTANT };

/* What a model declares about one parameter. */
struct param_spec {
  const char *name;
  int ndim;
  size_t shape[PARAM_MAX_DIMS];
  enum param_init init;
  float init_value; /* standard deviation (normal, mean 0) or the constant */
  int weight_decay; /* 1: AdamW decays it (matrices), 0: not (biases, norms) */
  float init_bound; /* truncated normal only: at least init_value */
};

struct flat_param_entry {
  char name[PARAM_NAME_MAX];
  int ndim;
  size_t shape[PARAM_MAX_DIMS];
  enum param_init init;
  float init_value;
  int weight_decay;
  float init_bound;
  /* The counter-based random stream of its initial values: set by whoever groups
   * parameters into layouts (the runtime's wrap) from what the model declared, so that
   * the values do not depend on the grouping or the sharding. */
  uint64_t init_stream;
  size_t numel;
  size_t offset; /* first element in the flat buffer */
};

struct flat_layout {
  int n_params;
  struct flat_param_entry *params;
  int world_size;
  size_t numel;  /* sum of the parameters' sizes */
  size_t padded; /* world_size * shard >= numel */
  size_t shard;  /* elements each rank owns */
};

/* A parameter's elements that one rank owns: param-local [begin, end) at shard_offset in that rank's shard. */
struct owned_range {
  size_t begin, end;
  size_t shard_offset;
};

void flat_layout_init(struct flat_layout *layout, const struct param_spec *specs, int n_params, int world_size);
void flat_layout_free(struct flat_layout *layout);
struct owned_range flat_layout_owned(const struct flat_layout *layout, int param, int rank);

#endif
