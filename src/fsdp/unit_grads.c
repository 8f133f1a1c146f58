/* A unit's gradients: the unsharded buffer its backward accumulates into, and its
 * reduction (reduce-scatter, or all-reduce when replicated) into the fp32 sharded
 * gradient, in the reduce dtype, with accumulation over micro-batches and, under CPU
 * offload, the copy of the result to the host. */
#include <stdint.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/unit.h"
#include "unit_private.h"

static const char *reduction_name(const struct fsdp_unit *u) {
  return u->strategy == SHARD_NONE ? "all-reduce" : "reduce-scatter";
}

/* DDP in fp32 with the gradient on the device keeps one persistent gradient, the
 * replicated shard itself, which the kernels accumulate into. Otherwise (sharded, 16-bit
 * gradients, or an offloaded shard) the unsharded gradient is a buffer of its own. */
static int grad_is_shard(const struct fsdp_unit *u) {
  return u->strategy == SHARD_NONE && u->compute_dtype == DTYPE_F32 && !offloaded(u);
}

void fsdp_unit_begin_grads(struct fsdp_unit *u) {
  /* The unit's last reduction (of an earlier micro-batch) must be over before
   * another one adds to the same grad_shard. */
  fsdp_unit_release_grads(u);
  struct stream *compute = u->streams->compute;
  if (grad_is_shard(u)) {
    u->grad_full = u->grad_shard;
    if (!u->unreduced && !u->grads_in_shard) device_memset(compute, u->grad_full, 0, shard_bytes(u));
  } else if (!u->unreduced) {
    FSDP_CHECK(u->grad_full == NULL);
    u->grad_full = device_alloc(device_of(u), full_bytes(u), MEM_UNSHARDED_GRADS, compute);
    device_memset(compute, u->grad_full, 0, full_bytes(u));
  }
  u->unreduced = 0;
}

void fsdp_unit_keep_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->unreduced);
  u->unreduced = 1;
  if (grad_is_shard(u)) u->grad_full = NULL;
}

/* 16-bit gradients reduced in another dtype go through fp32, in a comm buffer of their
 * own (FSDP2's reduce-scatter input in reduce_dtype); the 16-bit buffer is read by
 * nothing after the cast, so it is freed at once, in the reduce-scatter stream's order. */
static float *widened_grads(struct fsdp_unit *u, struct nn_ctx *c) {
  size_t padded = u->layout.padded;
  float *wide = device_alloc(device_of(u), padded * sizeof(float), MEM_COMM, c->stream);
  nn_cast(c, tensor_1d(wide, DTYPE_F32, padded), tensor_1d(u->grad_full, u->compute_dtype, padded));
  device_free(device_of(u), u->grad_full, c->stream);
  u->grad_full = NULL;
  return wide;
}

/* On the reduce-scatter stream: the gradients, in the param dtype (as in PyTorch), are
 * reduced in the reduce dtype into out (the fp32 shard on the device), averaged (each rank's loss is the mean
 * over its own tokens: averaging gives the mean over the global batch). Returns the
 * buffer the collective reads, freed once it is over (NULL: the persistent gradient). */
static void *launch_reduction(struct fsdp_unit *u, const char *label, float *out) {
  const struct fsdp_streams *s = u->streams;
  struct nn_ctx c = ctx_on(u, s->reduce_scatter);
  size_t shard = u->layout.shard, padded = u->layout.padded;
  enum dtype gd = u->compute_dtype;
  if (grad_is_shard(u)) {
    comm_all_reduce_async(s->reduce_scatter_group, s->reduce_scatter, label, u->grad_full, shard, COMM_F32, COMM_AVG);
    return NULL;
  }
  if (u->strategy == SHARD_NONE) {
    /* The whole gradient, widened into out, is all-reduced there (in fp32, as DDP's). */
    void *grads = u->grad_full;
    nn_cast(&c, tensor_1d(out, DTYPE_F32, padded), tensor_1d(grads, gd, padded));
    comm_all_reduce_async(s->reduce_scatter_group, s->reduce_scatter, label, out, shard, COMM_F32, COMM_AVG);
    return grads;
  }
  enum dtype rd = u->mp.reduce_dtype;
  if (comm_size(s->reduce_scatter_group) == 1 && (rd == DTYPE_F32 || rd == gd)) {
    /* One rank's average is its own gradient, which a reduction in a dtype that rounds
     * nothing leaves as it is: widened into out, with no collective to copy it again. */
    nn_cast(&c, tensor_1d(out, DTYPE_F32, shard), tensor_1d(u->grad_full, gd, shard));
    return u->grad_full;
  }
  void *send = u->grad_full;
  enum dtype sd = gd;
  if (gd != DTYPE_F32 && gd != rd) {
    send = widened_grads(u, &c);
    sd = DTYPE_F32;
  }
  if (rd == DTYPE_BF16) {
    /* Narrowed in place; the 16-bit result lands in the upper half of out and is widened there. */
    if (sd == DTYPE_F32) nn_cast(&c, tensor_1d(send, DTYPE_BF16, padded), tensor_1d(send, DTYPE_F32, padded));
    uint16_t *result = (uint16_t *)out + shard;
    comm_reduce_scatter_async(s->reduce_scatter_group, s->reduce_scatter, label, send, result, shard, COMM_BF16,
                              COMM_AVG);
    nn_cast(&c, tensor_1d(out, DTYPE_F32, shard), tensor_1d(result, DTYPE_BF16, shard));
  } else {
    comm_reduce_scatter_async(s->reduce_scatter_group, s->reduce_scatter, label, send, out, shard, COMM_F32,
                              COMM_AVG);
  }
  return send;
}

/* The reduced gradients in out (on the device) join grad_shard on stream s: added to
 * what it holds, or under CPU offload copied to the host, where the sum so far is first
 * brought to the device and added there, so that no host thread waits mid-backward. */
static void join_shard(struct fsdp_unit *u, float *out, struct stream *s) {
  struct nn_ctx c = ctx_on(u, s);
  if (!offloaded(u)) {
    nn_add(&c, shard_tensor(u, u->grad_shard), shard_tensor(u, out));
    return;
  }
  if (u->grads_in_shard) {
    float *held = device_alloc(device_of(u), shard_bytes(u), MEM_COMM, s);
    device_copy_to_device(s, held, u->grad_shard, shard_bytes(u));
    nn_add(&c, shard_tensor(u, out), shard_tensor(u, held));
    device_free(device_of(u), held, s);
  }
  device_copy_to_host(s, u->grad_shard, out, shard_bytes(u));
}

void fsdp_unit_reduce_grads(struct fsdp_unit *u) {
  FSDP_CHECK(u->grad_full != NULL && !u->reducing && !u->unreduced);
  const struct fsdp_streams *s = u->streams;
  struct label label = label_of(reduction_name(u), u);
  mem_push_context(u->name, reduction_name(u));
  int replicated = u->strategy == SHARD_NONE;
  after_compute(u, s->reduce_scatter);
  /* A persistent gradient already holds what the last reduction left: the all-reduce of
   * its sum with the new local gradients adds their average to it. Otherwise the result
   * goes straight into grad_shard when that is on the device and holds nothing yet. */
  float *out = u->grad_shard;
  if (!grad_is_shard(u) && (u->grads_in_shard || offloaded(u))) {
    u->reduce_output = device_alloc(device_of(u), shard_bytes(u), MEM_COMM, s->reduce_scatter);
    out = u->reduce_output;
  }
  void *sent = launch_reduction(u, label.text, out);
  struct stream *last = s->reduce_scatter;
  if (s->replicate && !replicated) {
    /* HSDP: the shard group's average, averaged again across the replicas, is the
     * average over every rank; on a stream of its own, so that the next unit's
     * reduce-scatter does not wait for it. */
    event_record(u->scattered, s->reduce_scatter);
    stream_wait_event(s->replicate, u->scattered);
    struct label across = label_of("replicate all-reduce", u);
    comm_all_reduce_async(s->replicate_group, s->replicate, across.text, out, u->layout.shard, COMM_F32, COMM_AVG);
    last = s->replicate;
  }
  if (out != u->grad_shard) join_shard(u, out, last);
  mem_pop_context();
  event_record(u->reduced, last);
  u->grad_reducing = sent;
  u->grad_full = NULL;
  u->reducing = 1;
  u->grads_in_shard = 1;
  if (s->blocking) fsdp_unit_release_grads(u);
}

void fsdp_unit_release_grads(struct fsdp_unit *u) {
  if (!u->reducing) return;
  fsdp_streams_wait(u->streams, u->reduced, label_of(reduction_name(u), u).text);
  mem_push_context(u->name, reduction_name(u));
  device_free(device_of(u), u->grad_reducing, u->streams->compute);
  device_free(device_of(u), u->reduce_output, u->streams->compute);
  mem_pop_context();
  u->grad_reducing = NULL;
  u->reduce_output = NULL;
  u->reducing = 0;
}

void fsdp_unit_free_grads(struct fsdp_unit *u) {
  fsdp_unit_release_grads(u);
  if (!grad_is_shard(u)) device_free(device_of(u), u->grad_full, u->streams->compute);
  u->grad_full = NULL;
}
