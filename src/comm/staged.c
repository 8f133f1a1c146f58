/* The staged transport (transport.h): a group's collectives on a device stream as an MPI
 * collective on pinned host copies of the device buffers, for ranks that share a GPU,
 * and on cpu streams when forced. It uses only the device interface and MPI.
 *
 * The stream must not wait for MPI on a thread of the device's (a CUDA host function
 * may neither call CUDA nor block without stalling every other stream's host
 * functions), and it cannot wait for an event recorded only later. So each collective
 * puts on the stream:
 *   copy device -> pinned host;  copied_in := seq;  wait until done >= seq;
 *   copy pinned host -> device;  copied_back := seq,
 * the words being stream words (fsdp/stream.h). A worker thread per group takes the
 * collectives in launch order, waits for copied_in, runs the MPI collective on the
 * host buffers and stores seq into done, which lets the stream go on. The GPU, the
 * compute thread and the other streams never wait for MPI, and the group's
 * collectives reach MPI in the same order on every rank.
 *
 * Why it cannot deadlock (docs/architecture.md says it at length): the worker makes no
 * device call at all between taking a collective and releasing the stream, only loads
 * and stores of mapped words, and MPI. CUDA lets many calls (allocations and frees, a
 * kernel's first launch) wait for every stream while holding the context; a worker that
 * queried an event there deadlocked against the launching thread waiting in such a call
 * for the stream the worker was to release (collectives_cuda_w4 on the H200). Now the
 * launching thread is the only one that makes device calls, they wait only for work
 * already launched, and launched work finishes without that thread: it needs the
 * workers and the peers' launches, which every rank makes in the same order.
 *
 * One pair of pinned buffers serves every collective of the group: a collective's copy
 * in comes, in stream order, after the previous one's copy back, which comes after the
 * worker is done with it. A group's collectives are therefore launched on one stream
 * (each comm stream has a group of its own). The buffers take the size of the group's
 * largest collective so far: growing them waits (a host poll of copied_back) for the
 * collectives launched before, then frees and allocates pinned memory, on the launching
 * thread, where by the same argument it cannot deadlock. The runtime's collectives
 * repeat every step, so only the first step grows them. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "transport.h"
#include "watchdog.h"

struct job {
  struct collective c; /* on the host buffers */
  uint32_t seq;
  struct job *next;
};

struct staged_comm {
  struct device *device;
  struct stream *stream; /* the one stream the group's collectives are launched on */
  /* Pinned host copies of the send and receive buffers, and the ring's workspace,
   * grown to the largest collective so far. */
  void *host_send, *host_recv, *workspace;
  size_t host_bytes, workspace_bytes;
  /* The seqs of the last collective whose input the stream has copied in, that the
   * worker has finished, and whose result the stream has copied back. */
  struct stream_word *copied_in, *done, *copied_back;
  uint32_t launched; /* the seq of the last collective launched (the launching thread's) */

  pthread_t worker;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  struct job *head, *tail;
  int stopping;
};

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
  for (struct job *j; (j = next_job(t));) {
    stream_word_wait(t->copied_in, j->seq);
    host_collective(&j->c);
    /* Release: the host buffers' new contents are visible before the stream copies them. */
    stream_word_store(t->done, j->seq);
    watch_finish(j->c.watch);
    free(j);
  }
  return NULL;
}

struct staged_comm *staged_open(struct device *d) {
  struct staged_comm *t = fsdp_xcalloc(1, sizeof *t);
  t->device = d;
  t->copied_in = stream_word_create(d);
  t->done = stream_word_create(d);
  t->copied_back = stream_word_create(d);
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->wake, NULL);
  if (pthread_create(&t->worker, NULL, run_worker, t) != 0) fsdp_fatal("staged transport: pthread_create failed");
  return t;
}

/* Bytes each side of c holds: what is sent, and what is received. */
static void sides(const struct collective *c, size_t *send_bytes, size_t *recv_bytes) {
  size_t part = c->count * comm_dtype_size(c->dtype), all = part * (size_t)c->group->size;
  *send_bytes = c->kind == COMM_REDUCE_SCATTER ? all : part;
  *recv_bytes = c->kind == COMM_ALL_GATHER ? all : part;
}

/* Grows the host buffers once every collective launched before is done with them. */
static void reserve(struct staged_comm *t, size_t host_bytes, size_t workspace_bytes) {
  if (host_bytes <= t->host_bytes && workspace_bytes <= t->workspace_bytes) return;
  stream_word_wait(t->copied_back, t->launched);
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

static void enqueue(struct staged_comm *t, struct job *j) {
  pthread_mutex_lock(&t->lock);
  if (t->tail)
    t->tail->next = j;
  else
    t->head = j;
  t->tail = j;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
}

void staged_launch(struct staged_comm *t, struct stream *s, const struct collective *c) {
  if (!t->stream) t->stream = s;
  if (t->stream != s)
    fsdp_fatal("%s: a group's staged collectives run on one stream ('%s'), not on '%s' too", c->label,
               stream_name(t->stream), stream_name(s));
  size_t send_bytes, recv_bytes;
  sides(c, &send_bytes, &recv_bytes);
  reserve(t, send_bytes > recv_bytes ? send_bytes : recv_bytes, host_collective_workspace_bytes(c));

  struct job *j = fsdp_xcalloc(1, sizeof *j);
  j->c = *c;
  j->c.workspace = t->workspace;
  j->c.recv = t->host_recv;
  /* An all-reduce is in place: its buffer goes out and comes back through host_recv. */
  j->c.send = c->kind == COMM_ALL_REDUCE ? NULL : t->host_send;
  j->c.watch = watch_launch(c->label, host_collective_call(c));
  uint32_t seq = j->seq = ++t->launched;
  /* Queued before the stream's wait, which on a host stream blocks the caller; the
   * worker owns j from here. */
  enqueue(t, j);

  device_copy_to_host(s, c->kind == COMM_ALL_REDUCE ? t->host_recv : t->host_send,
                      c->kind == COMM_ALL_REDUCE ? c->recv : c->send, send_bytes);
  stream_write_word(s, t->copied_in, seq);
  stream_wait_word(s, t->done, seq);
  device_copy_to_device(s, c->recv, t->host_recv, recv_bytes);
  stream_write_word(s, t->copied_back, seq);
}

/* The stream may be gone (destroying it waits for its work), so the words tell when the
 * last copy back is done, not the stream. */
void staged_close(struct staged_comm *t) {
  pthread_mutex_lock(&t->lock);
  t->stopping = 1; /* the worker finishes the collectives queued, then returns */
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->worker, NULL);
  stream_word_wait(t->copied_back, t->launched);
  device_free_pinned(t->device, t->host_send);
  device_free_pinned(t->device, t->host_recv);
  device_free(device_cpu(), t->workspace, NULL);
  stream_word_destroy(t->copied_in);
  stream_word_destroy(t->done);
  stream_word_destroy(t->copied_back);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->wake);
  free(t);
}
