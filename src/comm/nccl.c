/* The NCCL transport (gpu.h): a group's collectives on cuda streams as NCCL calls
 * enqueued on the stream, over a communicator of the group's own (so a dup'd group,
 * one per comm stream, never shares one with another stream). Built only where CMake
 * found NCCL (FSDP_NCCL); nccl_none.c otherwise. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>

#include "fsdp/error.h"
#include "gpu.h"

struct nccl_comm {
  ncclComm_t comm;
};

static void nccl_check(ncclResult_t rc, ncclComm_t comm, const char *call, const char *label) {
  if (rc == ncclSuccess) return;
  const char *detail = comm ? ncclGetLastError(comm) : NULL;
  fsdp_fatal("%s: %s failed: %s%s%s", label, call, ncclGetErrorString(rc), detail && *detail ? ": " : "",
             detail && *detail ? detail : "");
}

struct nccl_comm *nccl_open(struct comm_group *g, int ordinal) {
  ncclUniqueId id;
  if (g->rank == 0) nccl_check(ncclGetUniqueId(&id), NULL, "ncclGetUniqueId", "comm");
  /* Over the group's communicator, bounded by the watchdog; once every rank has the
   * id, ncclCommInitRank (which waits for all of them without a bound) finds them there. */
  comm_broadcast(g, &id, sizeof id, 0);
  cudaError_t rc = cudaSetDevice(ordinal);
  if (rc != cudaSuccess) fsdp_fatal("cuda: cudaSetDevice(%d) failed: %s", ordinal, cudaGetErrorString(rc));
  struct nccl_comm *n = fsdp_xcalloc(1, sizeof *n);
  nccl_check(ncclCommInitRank(&n->comm, g->size, id, g->rank), NULL, "ncclCommInitRank", "comm");
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
  cudaStream_t stream = stream_native_handle(s);
  ncclDataType_t type = nccl_type(c->dtype);
  switch (c->kind) {
    case ALL_GATHER:
      nccl_check(ncclAllGather(c->send, c->recv, c->count, type, n->comm, stream), n->comm, "ncclAllGather", c->label);
      return;
    case REDUCE_SCATTER:
      nccl_check(ncclReduceScatter(c->send, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm,
                 "ncclReduceScatter", c->label);
      return;
    case ALL_REDUCE:
      nccl_check(ncclAllReduce(c->recv, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm,
                 "ncclAllReduce", c->label);
      return;
  }
}

void nccl_close(struct nccl_comm *n) {
  nccl_check(ncclCommDestroy(n->comm), NULL, "ncclCommDestroy", "comm_group_free");
  free(n);
}
