/* The NCCL transport (gpu.h): a group's collectives on cuda streams as NCCL calls
 * enqueued on the stream, over a communicator of the group's own (so a dup'd group,
 * one per comm stream, never shares one with another stream). Built only where CMake
 * found NCCL; nccl_none.c otherwise.
 *
 * The watchdog (--comm-timeout): nothing in src/comm waits for an NCCL call (the
 * runtime waits on its events), so each communicator has a thread that records an
 * event after every collective and polls the oldest: one that has not completed
 * comm_timeout() seconds after its launch (measured from the launch, as PyTorch's
 * ProcessGroupNCCL does), or an asynchronous error NCCL reports, makes it abort the
 * communicator (ncclCommAbort frees the GPU's kernels stuck waiting for a peer) and
 * end the job naming the rank and the collective. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fsdp/error.h"
#include "fsdp/timer.h"
#include "gpu.h"

/* A collective launched and not yet seen complete. */
struct pending {
  cudaEvent_t done;
  double launched_ms;
  const char *call;
  char label[STREAM_LABEL_MAX];
  struct pending *next;
};

struct nccl_comm {
  ncclComm_t comm;
  int ordinal;
  pthread_t watchdog;
  pthread_mutex_t lock;
  struct pending *head, *tail;
  int stopping;
};

static void nccl_check(ncclResult_t rc, ncclComm_t comm, const char *call, const char *label) {
  if (rc == ncclSuccess) return;
  const char *detail = comm ? ncclGetLastError(comm) : NULL;
  fsdp_fatal("%s: %s failed: %s%s%s", label, call, ncclGetErrorString(rc), detail && *detail ? ": " : "",
             detail && *detail ? detail : "");
}

static void cuda_check(cudaError_t rc, const char *call) {
  if (rc != cudaSuccess) fsdp_fatal("cuda: %s failed: %s", call, cudaGetErrorString(rc));
}

/* 1 when the oldest pending collective has completed (and is dropped), 0 when there is
 * none or it is still running (and is checked against the deadline). */
static int poll_oldest(struct nccl_comm *n) {
  pthread_mutex_lock(&n->lock);
  struct pending *p = n->head;
  pthread_mutex_unlock(&n->lock);
  if (!p) return 0;
  cudaError_t rc = cudaEventQuery(p->done);
  if (rc == cudaErrorNotReady) {
    if (time_now_ms() - p->launched_ms > 1000.0 * comm_timeout()) {
      ncclCommAbort(n->comm);
      fsdp_fatal("%s (%s) has not finished after %g s (--comm-timeout): a rank of its group is stopped, dead or "
                 "cut off from the network; ending the job",
                 p->label, p->call, comm_timeout());
    }
    return 0;
  }
  cuda_check(rc, "cudaEventQuery");
  pthread_mutex_lock(&n->lock);
  n->head = p->next;
  if (!n->head) n->tail = NULL;
  pthread_mutex_unlock(&n->lock);
  cuda_check(cudaEventDestroy(p->done), "cudaEventDestroy");
  free(p);
  return 1;
}

static void *watch_nccl(void *arg) {
  struct nccl_comm *n = arg;
  cuda_check(cudaSetDevice(n->ordinal), "cudaSetDevice");
  for (;;) {
    while (poll_oldest(n)) continue;
    ncclResult_t async = ncclSuccess;
    nccl_check(ncclCommGetAsyncError(n->comm, &async), n->comm, "ncclCommGetAsyncError", "nccl watchdog");
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(n->comm);
      nccl_check(async, NULL, "a collective", "nccl watchdog");
    }
    pthread_mutex_lock(&n->lock);
    int done = n->stopping && !n->head;
    pthread_mutex_unlock(&n->lock);
    if (done) return NULL;
    struct timespec pause = {0, 10 * 1000 * 1000}; /* 10 ms: deadlines are seconds away */
    nanosleep(&pause, NULL);
  }
}

/* Hands the collective just enqueued on stream to the watchdog. */
static void watch(struct nccl_comm *n, cudaStream_t stream, const struct collective *c, const char *call) {
  struct pending *p = fsdp_xcalloc(1, sizeof *p);
  cuda_check(cudaEventCreateWithFlags(&p->done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cuda_check(cudaEventRecord(p->done, stream), "cudaEventRecord");
  p->launched_ms = time_now_ms();
  p->call = call;
  snprintf(p->label, sizeof p->label, "%s", c->label);
  pthread_mutex_lock(&n->lock);
  if (n->tail)
    n->tail->next = p;
  else
    n->head = p;
  n->tail = p;
  pthread_mutex_unlock(&n->lock);
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
  n->ordinal = ordinal;
  nccl_check(ncclCommInitRank(&n->comm, g->size, id, g->rank), NULL, "ncclCommInitRank", "comm");
  pthread_mutex_init(&n->lock, NULL);
  if (pthread_create(&n->watchdog, NULL, watch_nccl, n) != 0) fsdp_fatal("nccl: pthread_create failed");
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
  const char *call = "ncclAllGather";
  switch (c->kind) {
    case ALL_GATHER:
      nccl_check(ncclAllGather(c->send, c->recv, c->count, type, n->comm, stream), n->comm, call, c->label);
      break;
    case REDUCE_SCATTER:
      call = "ncclReduceScatter";
      nccl_check(ncclReduceScatter(c->send, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm, call,
                 c->label);
      break;
    case ALL_REDUCE:
      call = "ncclAllReduce";
      nccl_check(ncclAllReduce(c->recv, c->recv, c->count, type, nccl_op(c), n->comm, stream), n->comm, call,
                 c->label);
      break;
  }
  watch(n, stream, c, call);
}

void nccl_close(struct nccl_comm *n) {
  pthread_mutex_lock(&n->lock);
  n->stopping = 1; /* the watchdog sees the collectives launched through, then returns */
  pthread_mutex_unlock(&n->lock);
  pthread_join(n->watchdog, NULL);
  pthread_mutex_destroy(&n->lock);
  nccl_check(ncclCommDestroy(n->comm), NULL, "ncclCommDestroy", "comm_group_free");
  free(n);
}
