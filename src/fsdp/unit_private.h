/* Private to src/fsdp: what the unit's parameter side (unit.c) and its gradient side
 * (unit_grads.c) share. */
#ifndef FSDP_UNIT_PRIVATE_H
#define FSDP_UNIT_PRIVATE_H

#include <stdio.h>

#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/unit.h"

static inline size_t shard_bytes(const struct fsdp_unit *u) { return u->layout.shard * sizeof(float); }
/* An unsharded buffer: the padded flat parameter in the compute dtype. */
static inline size_t full_bytes(const struct fsdp_unit *u) {
  return u->layout.padded * dtype_size(u->compute_dtype);
}

static inline struct device *device_of(const struct fsdp_unit *u) { return u->streams->device; }

/* CPU offload: the sharded state is in pinned host memory. */
static inline int offloaded(const struct fsdp_unit *u) { return u->streams->host != NULL; }

static inline struct nn_ctx ctx_on(const struct fsdp_unit *u, struct stream *s) {
  return (struct nn_ctx){device_of(u), s};
}

static inline struct tensor shard_tensor(const struct fsdp_unit *u, float *shard) {
  return tensor_1d(shard, DTYPE_F32, u->layout.shard);
}

/* "all-gather block 3": what a collective is called in traces. */
struct label {
  char text[STREAM_LABEL_MAX];
};
static inline struct label label_of(const char *op, const struct fsdp_unit *u) {
  struct label l;
  snprintf(l.text, sizeof l.text, "%s %s", op, u->name);
  return l;
}

/* A collective on another stream must not start before the compute stream's work
 * so far (the optimizer's update, the backward's gradients): free on CPU, where
 * the compute stream is the caller, and needed on a GPU. */
static inline void after_compute(struct fsdp_unit *u, struct stream *comm) {
  event_record(u->compute_done, u->streams->compute);
  stream_wait_event(comm, u->compute_done);
}

/* Waits for a launched reduction and frees the unit's gradient buffers (unit_grads.c). */
void fsdp_unit_free_grads(struct fsdp_unit *u);

#endif
