/* The NCCL transport (transport.h): a group's collectives on cuda streams as NCCL calls
 * enqueued on the stream, over a communicator of the group's own (so a dup'd group,
 * one per comm stream, never shares one with another stream). Built only where CMake
 * found NCCL; nccl_none.c otherwise.
 *
 * The watchdog (watchdog.h) bounds each collective from its launch: after every call
 * the stream stores the call's sequence number into a word of mapped host memory, and
 * the monitor reads the word for itself, so no thread here polls the GPU or makes a
 * CUDA call for it. Past --comm-timeout the monitor ends the job (every rank's process,
 * and with it its kernels waiting for a peer), naming the rank, the collective and the
 * NCCL call. Errors NCCL reports asynchronously end the job at the next launch (or at
 * close); one that leaves a kernel hanging meets the deadline first. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "transport.h"
#include "watchdog.h"

struct nccl_comm {
  ncclComm_t comm;
  struct stream_word *completed; /* the seq of the last collective the GPU has finished */
  uint32_t launched;
};

static void nccl_check(ncclResult_t rc, ncclComm_t comm, const char *call, const char *label) {
  if (rc == ncclSuccess) return;
  const char *detail = comm ? ncclGetLastError(comm) : NULL;
  fsdp_fatal("%s: %s failed: %s%s%s", label, call, ncclGetErrorString(rc), detail && *detail ? ": " : "",
             detail && *detail ? detail : "");
}

/* An error of an earlier collective, which NCCL reports after the fact. */
static void check_async_error(struct nccl_comm *n, const char *label) {
  ncclResult_t async = ncclSuccess;
  nccl_check(ncclCommGetAsyncError(n->comm, &async), n->comm, "ncclCommGetAsyncError", label);
  if (async != ncclSuccess && async != ncclInProgress) nccl_check(async, n->comm, "an earlier collective", label);
}

struct nccl_comm *nccl_open(struct comm_group *g, struct stream *s) {
  int ordinal = 0;
  cudaError_t rc = cudaStreamGetDevice((cudaStream_t)stream_native_handle(s), &ordinal);
  if (rc != cudaSuccess) fsdp_fatal("cuda: cudaStreamGetDevice failed: %s", cudaGetErrorString(rc));
  ncclUniqueId id;
  if (g->rank == 0) nccl_check(ncclGetUniqueId(&id), NULL, "ncclGetUniqueId", "comm");
  /* Over the group's communicator (an MPI wait, under the watchdog); ncclCommInitRank,
   * which waits for every rank of the group, is bounded by the watchdog too. */
  comm_broadcast(g, &id, sizeof id, 0);
  rc = cudaSetDevice(ordinal);
  if (rc != cudaSuccess) fsdp_fatal("cuda: cudaSetDevice(%d) failed: %s", ordinal, cudaGetErrorString(rc));
  struct nccl_comm *n = fsdp_xcalloc(1, sizeof *n);
  struct watch_op *setup = watch_launch("opening an NCCL communicator", "ncclCommInitRank");
  nccl_check(ncclCommInitRank(&n->comm, g->size, id, g->rank), NULL, "ncclCommInitRank", "comm");
  watch_finish(setup);
  n->completed = stream_word_create(stream_device(s));
  return n;
}

static ncclDataType_t nccl_type(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return ncclFloat32;
    case COMM_F64: return ncclFloat64;
    case COMM_I32: return ncclInt32;
    case COMM_I64: return ncclInt64;
    case COMM_BF16: return ncclBfloat16;
    case COMM_F16: return ncclFloat16;
  }
  fsdp_fatal("unknown comm dtype %d", (int)dtype);
}

/* NCCL's ncclAvg divides integers too (rounding down); the MPI path refuses it, and so
 * does this one, so that both transports accept the same calls. */
static ncclRedOp_t nccl_op(const struct collective *c) {
  switch (c->op) {
    case COMM_SUM: return ncclSum;
    case COMM_MAX: return ncclMax;
    case COMM_AVG:
      if (c->dtype != COMM_F32 && c->dtype != COMM_F64 && c->dtype != COMM_BF16)
        fsdp_fatal("%s: COMM_AVG needs a floating-point dtype (got integer dtype %d)", c->label, (int)c->dtype);
      return ncclAvg;
  }
  fsdp_fatal("%s: unknown reduce op %d", c->label, (int)c->op);
}

void nccl_launch(struct nccl_comm *n, struct stream *s, const struct collective *c) {
  check_async_error(n, c->label);
  cudaStream_t stream = stream_native_handle(s);
  ncclDataType_t type = nccl_type(c->dtype);
  static const char *const CALLS[] = {[COMM_ALL_GATHER] = "ncclAllGather", [COMM_REDUCE_SCATTER] = "ncclReduceScatter",
                                      [COMM_ALL_REDUCE] = "ncclAllReduce"};
  const char *call = CALLS[c->kind];
  /* Watched from before the call, which may itself block. */
  watch_launch_on_stream(c->label, call, n->completed, ++n->launched);
  switch (c->kind) {
    case COMM_ALL_GATHER:
      nccl_check(ncclAllGather(c->send, c->recv, c->count, type, n->comm, stream), n->comm, call, c->label);
      break;
    case COMM_REDUCE_SCATTER:
      nccl_check(ncclReduceScatter(c->send, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm, call,
                 c->label);
      break;
    case COMM_ALL_REDUCE:
      nccl_check(ncclAllReduce(c->recv, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm, call,
                 c->label);
      break;
  }
  stream_write_word(s, n->completed, n->launched);
}

void nccl_close(struct nccl_comm *n) {
  watch_forget(n->completed); /* waits for the collectives launched */
  check_async_error(n, "comm_group_free");
  nccl_check(ncclCommDestroy(n->comm), NULL, "ncclCommDestroy", "comm_group_free");
  stream_word_destroy(n->completed);
  free(n);
}
