/* The staged transport (gpu.h): a group's collectives on a cuda stream, for ranks that
 * share a GPU, as an MPI collective on pinned host copies of the device buffers.
 *
 * The stream must not wait for MPI on a thread of CUDA's (a host function may neither
 * call CUDA nor block without stalling every other stream's host functions), and it
 * cannot wait for an event that is recorded only later (cudaStreamWaitEvent waits for
 * the record made before it, if any). So each collective puts on the stream:
 *   copy device -> pinned host;  record `ready`;  wait until flag >= seq;  copy back,
 * the wait being a stream memory operation (cuStreamWaitValue32) on a word of mapped
 * pinned memory. A worker thread per group takes the collectives in launch order, polls
 * `ready` (under the watchdog's deadline), runs the MPI collective on the host buffers
 * on its own thread, and stores seq into the flag, which lets the stream go on. The
 * GPU, the compute thread and the other streams never wait for MPI, and the group's
 * collectives reach MPI in the same order on every rank.
 *
 * One pair of pinned buffers serves every collective of the group: a collective's copy
 * in comes, in stream order, after the previous one's copy out, which comes after the
 * worker is done with it. Collectives of a group are therefore launched on one stream
 * (each comm stream has a group of its own); growing the buffers first waits for the
 * last copy back. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "gpu.h"
#include "watchdog.h"

typedef CUresult (*wait_value_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);

struct job {
  struct collective c; /* on the host buffers */
  cudaEvent_t ready;   /* the copy in has been made */
  uint32_t seq;
  struct job *next;
};

struct staged_comm {
  struct comm_group *group;
  struct device *device;
  struct stream *stream; /* the one stream the group's collectives are launched on */
  int ordinal;
  /* Pinned host copies of the send and receive buffers, and the ring's workspace,
   * grown to the largest collective so far. */
  void *host_send, *host_recv, *workspace;
  size_t host_bytes, workspace_bytes;
  /* The word the stream waits on: the seq of the last collective the worker finished. */
  _Atomic uint32_t *done;
  CUdeviceptr done_on_device;
  uint32_t launched; /* the seq of the last collective launched (the launching thread's) */
  cudaEvent_t copied_back; /* after the last collective's copy back: the buffers are free */
  wait_value_fn wait_value;

  pthread_t worker;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  struct job *head, *tail;
  int stopping;
};

#define CUDA_CHECK(call)                                                                                 \
  do {                                                                                                   \
    cudaError_t staged_rc_ = (call);                                                                     \
    if (staged_rc_ != cudaSuccess) fsdp_fatal("cuda: %s failed: %s", #call, cudaGetErrorString(staged_rc_)); \
  } while (0)

/* Polls, as mpi_wait does: the worker shares the cores with the compute thread. */
static void wait_ready(const struct job *j) {
  const long MAX_SLEEP_NS = 1000000;
  long sleep_ns = 5000;
  for (;;) {
    cudaError_t rc = cudaEventQuery(j->ready);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) fsdp_fatal("cuda: %s: cudaEventQuery failed: %s", j->c.label, cudaGetErrorString(rc));
    watch_check("the copy to host");
    struct timespec pause = {0, sleep_ns};
    nanosleep(&pause, NULL);
    if (sleep_ns < MAX_SLEEP_NS) sleep_ns *= 2;
  }
}

static struct job *next_job(struct staged_comm *t) {
  pthread_mutex_lock(&t->lock);
  while (!t->head && !t->stopping) pthread_cond_wait(&t->wake, &t->lock);
  struct job *j = t->head;
  if (j) {
    t->head = j->next;
    if (!t->head) t->tail = NULL;
  }
  pthread_mutex_unlock(&t->lock);
  return j;
}

static void *run_worker(void *arg) {
  struct staged_comm *t = arg;
  CUDA_CHECK(cudaSetDevice(t->ordinal));
  for (struct job *j; (j = next_job(t));) {
    watch_begin(j->c.label);
    wait_ready(j);
    host_collective(&j->c);
    watch_end();
    /* Release: the host buffers' new contents are visible before the stream copies them. */
    atomic_store_explicit(t->done, j->seq, memory_order_release);
    CUDA_CHECK(cudaEventDestroy(j->ready));
    free(j);
  }
  return NULL;
}

struct staged_comm *staged_open(struct comm_group *g, struct device *d, int ordinal) {
  struct staged_comm *t = fsdp_xcalloc(1, sizeof *t);
  t->group = g;
  t->device = d;
  t->ordinal = ordinal;
  enum cudaDriverEntryPointQueryResult found;
  void *fn = NULL;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn)
    fsdp_fatal("the staged transport needs the CUDA driver's cuStreamWaitValue32, which this driver lacks");
  t->wait_value = (wait_value_fn)fn;
  void *word = NULL;
  CUDA_CHECK(cudaHostAlloc(&word, sizeof *t->done, cudaHostAllocMapped | cudaHostAllocPortable));
  t->done = word;
  atomic_init(t->done, 0);
  void *on_device = NULL;
  CUDA_CHECK(cudaHostGetDevicePointer(&on_device, word, 0));
  t->done_on_device = (CUdeviceptr)(uintptr_t)on_device;
  CUDA_CHECK(cudaEventCreateWithFlags(&t->copied_back, cudaEventDisableTiming));
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->wake, NULL);
  if (pthread_create(&t->worker, NULL, run_worker, t) != 0) fsdp_fatal("staged transport: pthread_create failed");
  return t;
}

/* Bytes each side of c holds: what is sent, and what is received. */
static void sides(const struct collective *c, size_t *send_bytes, size_t *recv_bytes) {
  size_t part = c->count * comm_dtype_size(c->dtype), all = part * (size_t)c->group->size;
  *send_bytes = c->kind == REDUCE_SCATTER ? all : part;
  *recv_bytes = c->kind == ALL_GATHER ? all : part;
}

/* Grows the host buffers once every collective launched before has finished with them. */
static void reserve(struct staged_comm *t, size_t host_bytes, size_t workspace_bytes) {
  if (host_bytes <= t->host_bytes && workspace_bytes <= t->workspace_bytes) return;
  CUDA_CHECK(cudaEventSynchronize(t->copied_back));
  if (host_bytes > t->host_bytes) {
    device_free_pinned(t->device, t->host_send);
    device_free_pinned(t->device, t->host_recv);
    t->host_send = device_alloc_pinned(t->device, host_bytes, MEM_COMM);
    t->host_recv = device_alloc_pinned(t->device, host_bytes, MEM_COMM);
    t->host_bytes = host_bytes;
  }
  if (workspace_bytes > t->workspace_bytes) {
    device_free(device_cpu(), t->workspace, NULL);
    t->workspace = device_alloc(device_cpu(), workspace_bytes, MEM_COMM, NULL);
    t->workspace_bytes = workspace_bytes;
  }
}

void staged_launch(struct staged_comm *t, struct stream *s, const struct collective *c) {
  if (!t->stream) t->stream = s;
  if (t->stream != s)
    fsdp_fatal("%s: a group's staged collectives run on one stream ('%s'), not on '%s' too", c->label,
               stream_name(t->stream), stream_name(s));
  size_t send_bytes, recv_bytes;
  sides(c, &send_bytes, &recv_bytes);
  size_t largest = send_bytes > recv_bytes ? send_bytes : recv_bytes;
  reserve(t, largest, host_collective_workspace_bytes(c));

  struct job *j = fsdp_xcalloc(1, sizeof *j);
  j->c = *c;
  j->c.workspace = t->workspace;
  j->c.recv = t->host_recv;
  /* An all-reduce is in place: its buffer goes out and comes back through host_recv. */
  j->c.send = c->kind == ALL_REDUCE ? NULL : t->host_send;
  device_copy_to_host(s, c->kind == ALL_REDUCE ? t->host_recv : t->host_send,
                      c->kind == ALL_REDUCE ? c->recv : c->send, send_bytes);
  CUDA_CHECK(cudaEventCreateWithFlags(&j->ready, cudaEventDisableTiming));
  cudaStream_t stream = stream_native_handle(s);
  CUDA_CHECK(cudaEventRecord(j->ready, stream));
  j->seq = ++t->launched;
  /* GEQ compares modulo 2^32, so the count may wrap. */
  CUresult rc = t->wait_value((CUstream)stream, t->done_on_device, j->seq, CU_STREAM_WAIT_VALUE_GEQ);
  if (rc != CUDA_SUCCESS)
    fsdp_fatal("%s: cuStreamWaitValue32 failed (CUresult %d): the staged transport needs stream memory "
               "operations", c->label, (int)rc);
  device_copy_to_device(s, c->recv, t->host_recv, recv_bytes);
  CUDA_CHECK(cudaEventRecord(t->copied_back, stream));

  pthread_mutex_lock(&t->lock);
  if (t->tail)
    t->tail->next = j;
  else
    t->head = j;
  t->tail = j;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
}

void staged_close(struct staged_comm *t) {
  pthread_mutex_lock(&t->lock);
  t->stopping = 1; /* the worker finishes the collectives queued, then returns */
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->worker, NULL);
  CUDA_CHECK(cudaEventSynchronize(t->copied_back)); /* the stream itself may be gone */
  CUDA_CHECK(cudaEventDestroy(t->copied_back));
  device_free_pinned(t->device, t->host_send);
  device_free_pinned(t->device, t->host_recv);
  device_free(device_cpu(), t->workspace, NULL);
  CUDA_CHECK(cudaFreeHost((void *)t->done));
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->wake);
  free(t);
}
