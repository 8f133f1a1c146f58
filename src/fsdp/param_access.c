/* Reaching one named parameter of a model from outside its forward and backward: which
 * unit holds it, and this rank's elements of it, copied in or out of the sharded master
 * parameters. What loads and saves parameters by name (imports, exports) goes through
 * these, whatever the units are. */
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/runtime.h"
#include "fsdp/stream.h"

static int param_index(const struct fsdp_unit *u, const char *param) {
  for (int p = 0; p < u->layout.n_params; p++)
    if (strcmp(u->layout.params[p].name, param) == 0) return p;
  return -1;
}

int fsdp_model_find_param(const struct fsdp_model *m, const char *name, struct fsdp_unit **u, int *index) {
  for (int i = 0; i < m->n_units; i++) {
    int p = param_index(m->units[i], name);
    if (p >= 0) {
      *u = m->units[i];
      *index = p;
      return 1;
    }
  }
  return 0;
}

/* The owned elements' place in the shard, and their number. */
static size_t owned(const struct fsdp_unit *u, int param, size_t *offset) {
  struct sharded_param_info info = fsdp_unit_param_info(u, param);
  *offset = info.shard_offset;
  return info.end - info.begin;
}

void fsdp_unit_write_param_shard(struct fsdp_unit *u, int param, const float *values) {
  size_t offset, n = owned(u, param, &offset);
  if (n == 0) return;
  struct stream *home = fsdp_streams_home(u->streams);
  device_copy_to_device(home, u->param_shard + offset, values, n * sizeof(float));
  stream_synchronize(home);
  u->rounded_stale = 1;
}

void fsdp_unit_read_param_shard(const struct fsdp_unit *u, int param, float *values) {
  size_t offset, n = owned(u, param, &offset);
  if (n == 0) return;
  struct stream *home = fsdp_streams_home(u->streams);
  device_copy_to_host(home, values, u->param_shard + offset, n * sizeof(float));
  stream_synchronize(home);
}
