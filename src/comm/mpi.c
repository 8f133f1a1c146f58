/* Process groups and collectives over Open MPI. MPI stays behind this file: the
 * layers above see only struct comm_group and the enums of comm.h. */
#include "fsdp/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/meta_clock.h"
#include "fsdp/stream.h"
#include "group.h"
#include "mpi_call.h"
#include "ring.h"
#include "transport.h"
#include "watchdog.h"

static struct comm_group world_group = {.comm = MPI_COMM_NULL, .size = 1};
static struct comm_group self_group = {.comm = MPI_COMM_NULL, .size = 1};

/* Grown when the collective is launched, by the launching thread, so that when it
 * happens does not depend on the comm threads' timing; the smaller buffer is freed in
 * the order of stream s, which may still be using it. */
static void *ring_workspace(struct comm_group *g, struct stream *s, size_t bytes) {
  if (bytes > g->ring_workspace_bytes) {
    mem_push_context("", "ring reduce-scatter");
    device_free(g->device, g->ring_workspace, s);
    g->ring_workspace = device_alloc(g->device, bytes, MEM_COMM, s);
    mem_pop_context();
    g->ring_workspace_bytes = bytes;
  }
  return g->ring_workspace;
}

static void free_ring_workspace(struct comm_group *g) {
  device_free(g->device, g->ring_workspace, NULL);
  g->ring_workspace = NULL;
  g->ring_workspace_bytes = 0;
}

/* Bytes one rank sends in a ring collective whose per-rank part is `part` bytes:
 * W - 1 parts for an all-gather or a reduce-scatter, twice that for an all-reduce
 * (a reduce-scatter, then an all-gather, of the whole buffer). */
static double ring_sent(const struct comm_group *g, double part) { return (g->size - 1) * part; }

static const char *thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown thread level";
  }
}

pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;

/* fsdp_fatal puts the rank in front of the message once the job has more than one. */
void mpi_check(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  pthread_mutex_lock(&mpi_lock);
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  pthread_mutex_unlock(&mpi_lock);
  text[length] = '\0';
  fsdp_fatal("%s failed: %s", call, length ? text : "(no error text)");
}

/* Open MPI's own waits spin on a core until the peers arrive. The comm streams'
 * threads share the cores with the compute thread (and, on one machine, with the
 * other ranks), so a wait spins only briefly, then sleeps between polls; each
 * MPI_Test also moves the transfers forward. */
void mpi_wait(MPI_Request *requests, int n, const char *call) {
  enum { SPIN_POLLS = 64 };
  const long MIN_SLEEP_NS = 5000, MAX_SLEEP_NS = 1000000;
  long sleep_ns = MIN_SLEEP_NS;
  /* Within a collective launched on a stream, that collective is watched already, from
   * its launch (older, so it is the one named); a blocking one is named by its call. */
  struct watch_op *watched = watch_launch(call, call);
  for (int polls = 0;; polls++) {
    int done = 0;
    MPI_CALL(call, MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
    if (done) break;
    if (polls < SPIN_POLLS) continue;
    struct timespec pause = {0, sleep_ns};
    nanosleep(&pause, NULL);
    if (sleep_ns < MAX_SLEEP_NS) sleep_ns *= 2;
  }
  watch_finish(watched);
}

/* A failed query counts as "not running" rather than going through mpi_check:
 * this is called on the way down from fsdp_fatal itself. */
static bool mpi_is_running(void) {
  int initialised = 0, finalised = 0;
  return MPI_Initialized(&initialised) == MPI_SUCCESS && initialised &&
         MPI_Finalized(&finalised) == MPI_SUCCESS && !finalised;
}

/* Installed into fsdp_fatal: a failing rank must take its peers down, or they would
 * wait forever in the next collective. */
static void abort_job(int exit_code) {
  watch_quiet();
  if (world_group.size > 1) comm_abort(exit_code);
  exit(exit_code);
}

static void open_group(struct comm_group *g, MPI_Comm comm, const char *name) {
  g->comm = comm;
  g->device = device_cpu();
  /* Return codes instead of MPI's default abort, so that failures reach mpi_check
   * and name the call that failed. */
  MPI_CALL(name, MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  MPI_CALL("MPI_Comm_rank", MPI_Comm_rank(comm, &g->rank));
  MPI_CALL("MPI_Comm_size", MPI_Comm_size(comm, &g->size));
  MPI_Comm machine;
  int on_machine;
  MPI_CALL("MPI_Comm_split_type", MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine));
  MPI_CALL("MPI_Comm_size", MPI_Comm_size(machine, &on_machine));
  MPI_CALL("MPI_Comm_free", MPI_Comm_free(&machine));
  g->spans_machines = on_machine < g->size;
}

/* FSDP_COMM_TIMEOUT bounds what runs before a program sets its own timeout (fsdp's
 * --comm-timeout is read after MPI has started): MPI's start-up above all. */
static void initial_timeout(void) {
  const char *text = getenv("FSDP_COMM_TIMEOUT");
  if (!text || !*text) return;
  char *end = NULL;
  double seconds = strtod(text, &end);
  if (*end != '\0' || !(seconds >= 1.0))
    fsdp_fatal("FSDP_COMM_TIMEOUT must be a number of seconds, at least 1 (as --comm-timeout), not '%s'", text);
  comm_set_timeout(seconds);
}

void comm_init(int *argc, char ***argv) {
  if (world_group.comm != MPI_COMM_NULL) return; /* MPI starts only once per process */
  /* Open MPI's non-blocking all-reduce (libnbc) picks, for two ranks, an algorithm
   * that sends the data one way and then back: on the testbed (bench/multinode.sh)
   * HSDP's all-reduce across two nodes ran at half the link's rate. The ring sends
   * both ways at once. Set only where the user has not chosen (MCA environment). */
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
  initial_timeout();
  /* MPI_Init_thread waits for every rank, with no bound of its own. */
  watch_start();
  struct watch_op *init = watch_launch("MPI_Init_thread", "MPI_Init_thread");
  int provided = MPI_THREAD_SINGLE;
  MPI_CALL("MPI_Init_thread", MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  watch_finish(init);
  open_group(&world_group, MPI_COMM_WORLD, "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
  open_group(&self_group, MPI_COMM_SELF, "MPI_Comm_set_errhandler(MPI_COMM_SELF)");
  fsdp_log_set_rank(world_group.rank, world_group.size);
  fsdp_set_abort_handler(abort_job);
  /* The comm streams call MPI from their own threads, one call at a time (mpi_lock). */
  if (provided < MPI_THREAD_SERIALIZED)
    fsdp_fatal("MPI provides %s but fsdp needs MPI_THREAD_SERIALIZED "
               "(is Open MPI built with thread support?)",
               thread_level_name(provided));
}

void comm_finalize(void) {
  if (!mpi_is_running()) return;
  /* MPI_Finalize waits for every rank without a bound; once all are here it does not. */
  comm_barrier(&world_group);
  transport_free(&world_group);
  transport_free(&self_group);
  free_ring_workspace(&world_group);
  free_ring_workspace(&self_group);
  struct watch_op *finalize = watch_launch("MPI_Finalize", "MPI_Finalize");
  MPI_CALL("MPI_Finalize", MPI_Finalize());
  watch_finish(finalize);
  watch_stop();
}

static struct comm_group *started_group(struct comm_group *g, const char *caller) {
  if (g->comm == MPI_COMM_NULL) fsdp_fatal("%s called before comm_init", caller);
  return g;
}

struct comm_group *comm_world(void) { return started_group(&world_group, "comm_world"); }
struct comm_group *comm_self(void) { return started_group(&self_group, "comm_self"); }

int comm_rank(const struct comm_group *g) { return g->rank; }
int comm_size(const struct comm_group *g) { return g->size; }

enum comm_dtype comm_dtype_of(enum dtype d) {
  switch (d) {
    case DTYPE_F32: return COMM_F32;
    case DTYPE_BF16: return COMM_BF16;
    case DTYPE_F16: return COMM_F16;
    case DTYPE_I32: return COMM_I32;
    case DTYPE_F64: return COMM_F64;
  }
  fsdp_fatal("unknown dtype %d", (int)d);
}

size_t comm_dtype_size(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return sizeof(float);
    case COMM_F64: return sizeof(double);
    case COMM_I32: return sizeof(int32_t);
    case COMM_I64: return sizeof(int64_t);
    case COMM_BF16:
    case COMM_F16: return sizeof(uint16_t);
  }
  fsdp_fatal("unknown comm dtype %d", (int)dtype);
}

static MPI_Datatype mpi_datatype(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return MPI_FLOAT;
    case COMM_F64: return MPI_DOUBLE;
    case COMM_I32: return MPI_INT32_T;
    case COMM_I64: return MPI_INT64_T;
    /* Only moved, never reduced by MPI (which has no type for them): any 2-byte type does. */
    case COMM_BF16:
    case COMM_F16: return MPI_UINT16_T;
  }
  fsdp_fatal("unknown comm dtype %d", (int)dtype);
}

/* 16-bit floats reduce only in the ring (bf16 sums there in fp32); fp16, which overflows
 * at 65504, is not reduced at all. */
static void check_reducible(enum comm_dtype dtype, enum comm_reduce_op op, bool bf16_allowed, const char *caller) {
  if (dtype == COMM_F16)
    fsdp_fatal("%s: fp16 cannot be reduced (reduce in bf16 or fp32)", caller);
  if (dtype == COMM_BF16 && !bf16_allowed)
    fsdp_fatal("%s: bf16 cannot be reduced here (only comm_reduce_scatter reduces bf16)", caller);
  if (dtype == COMM_BF16 && op != COMM_SUM && op != COMM_AVG)
    fsdp_fatal("%s: bf16 reduces with COMM_SUM or COMM_AVG only (got op %d)", caller, (int)op);
}

/* MPI has no average: COMM_AVG reduces with MPI_SUM and divide_by_size follows. */
static MPI_Op mpi_op(enum comm_reduce_op op, enum comm_dtype dtype, const char *caller) {
  switch (op) {
    case COMM_SUM: return MPI_SUM;
    case COMM_MAX: return MPI_MAX;
    case COMM_AVG:
      if (dtype != COMM_F32 && dtype != COMM_F64)
        fsdp_fatal("%s: COMM_AVG needs a floating-point dtype (got integer dtype %d)", caller,
                   (int)dtype);
      return MPI_SUM;
  }
  fsdp_fatal("%s: unknown reduce op %d", caller, (int)op);
}

/* Division rather than a multiply by 1/size, so that an exact sum gives the
 * correctly rounded average. */
static void divide_by_size(void *buf, size_t count, enum comm_dtype dtype, int size) {
  if (dtype == COMM_F32) {
    float *x = buf;
    for (size_t i = 0; i < count; i++) x[i] /= (float)size;
  } else {
    double *x = buf;
    for (size_t i = 0; i < count; i++) x[i] /= (double)size;
  }
}

/* MPI counts are int; truncating a size_t would silently move the wrong amount. */
static int mpi_count(size_t count, const char *caller) {
  if (count > INT_MAX)
    fsdp_fatal("%s: count %zu exceeds MPI's limit of INT_MAX (%d) elements per call", caller,
               count, INT_MAX);
  return (int)count;
}

static enum comm_algorithm all_gather_algorithm = COMM_ALGORITHM_AUTO,
                           reduce_scatter_algorithm = COMM_ALGORITHM_AUTO;

void comm_set_algorithm(enum comm_kind kind, enum comm_algorithm a) {
  if (kind == COMM_ALL_GATHER)
    all_gather_algorithm = a;
  else if (kind == COMM_REDUCE_SCATTER)
    reduce_scatter_algorithm = a;
  else
    fsdp_fatal("comm_set_algorithm: kind %d has no algorithm to choose", (int)kind);
}

static bool all_gather_on_ring(const struct comm_group *g) {
  if (all_gather_algorithm == COMM_ALGORITHM_AUTO) return g->spans_machines;
  return all_gather_algorithm == COMM_ALGORITHM_RING;
}

void comm_all_gather(struct comm_group *g, const void *send, void *recv, size_t count,
                     enum comm_dtype dtype) {
  if (g->meta) return;
  if (all_gather_on_ring(g)) {
    ring_all_gather(g->comm, g->rank, g->size, send, recv, count * comm_dtype_size(dtype));
    return;
  }
  int n = mpi_count(count, "comm_all_gather");
  /* Compared as integers: recv may be NULL when count is 0, and NULL + 0 is undefined. */
  uintptr_t own_slice = (uintptr_t)recv + (size_t)g->rank * count * comm_dtype_size(dtype);
  const void *mpi_send = (uintptr_t)send == own_slice ? MPI_IN_PLACE : send;
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Request request;
  MPI_CALL("MPI_Iallgather", MPI_Iallgather(mpi_send, n, type, recv, n, type, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Iallgather");
}

/* AUTO takes the ring from this much reduce-scatter input (count * W elements) up:
 * from there the ring is 2.5x (W=2) and 3.4-9x (W=4) faster than Open MPI's
 * MPI_Ireduce_scatter_block; below it the two are a few microseconds apart
 * (bench/collectives.sh, docs/benchmarks.md). */
enum { RING_MIN_INPUT_BYTES = 128 << 10 };

/* The ring sums floating point only; MAX and the integer dtypes always go to MPI, bf16
 * always to the ring. */
static bool use_ring(int size, size_t count, enum comm_dtype dtype, enum comm_reduce_op op) {
  if (dtype == COMM_BF16) return true;
  if (op == COMM_MAX || (dtype != COMM_F32 && dtype != COMM_F64)) return false;
  if (reduce_scatter_algorithm == COMM_ALGORITHM_AUTO)
    return count * (size_t)size * comm_dtype_size(dtype) >= RING_MIN_INPUT_BYTES;
  return reduce_scatter_algorithm == COMM_ALGORITHM_RING;
}

/* The MPI reduce-scatter itself, with the ring's workspace already in place. */
static void reduce_scatter_now(struct comm_group *g, void *workspace, const void *send, void *recv, size_t count,
                               enum comm_dtype dtype, enum comm_reduce_op op) {
  if (use_ring(g->size, count, dtype, op)) {
    ring_reduce_scatter(g->comm, g->rank, g->size, workspace, send, recv, count, dtype, op);
    return;
  }
  int n = mpi_count(count, "comm_reduce_scatter");
  MPI_Op mop = mpi_op(op, dtype, "comm_reduce_scatter");
  MPI_Request request;
  MPI_CALL("MPI_Ireduce_scatter_block",
           MPI_Ireduce_scatter_block(send, recv, n, mpi_datatype(dtype), mop, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Ireduce_scatter_block");
  if (op == COMM_AVG) divide_by_size(recv, count, dtype, g->size);
}

size_t host_collective_workspace_bytes(const struct collective *c) {
  const struct comm_group *g = c->group;
  return c->kind == COMM_REDUCE_SCATTER && use_ring(g->size, c->count, c->dtype, c->op)
             ? ring_workspace_bytes(g->size, c->count, c->dtype)
             : 0;
}

/* The group's ring workspace for c, or NULL when c takes none. */
static void *workspace_for(struct comm_group *g, struct stream *s, const struct collective *c) {
  size_t bytes = host_collective_workspace_bytes(c);
  return bytes ? ring_workspace(g, s, bytes) : NULL;
}

void comm_reduce_scatter(struct comm_group *g, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op) {
  check_reducible(dtype, op, true, "comm_reduce_scatter");
  struct collective c = {COMM_REDUCE_SCATTER, g, NULL, send, recv, count, dtype, op, "", NULL};
  void *workspace = workspace_for(g, NULL, &c);
  if (!g->meta) reduce_scatter_now(g, workspace, send, recv, count, dtype, op);
}

void comm_all_reduce(struct comm_group *g, void *buf, size_t count, enum comm_dtype dtype,
                     enum comm_reduce_op op) {
  check_reducible(dtype, op, false, "comm_all_reduce");
  if (g->meta) return;
  int n = mpi_count(count, "comm_all_reduce");
  MPI_Op mop = mpi_op(op, dtype, "comm_all_reduce");
  MPI_Request request;
  MPI_CALL("MPI_Iallreduce", MPI_Iallreduce(MPI_IN_PLACE, buf, n, mpi_datatype(dtype), mop, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Iallreduce");
  if (op == COMM_AVG) divide_by_size(buf, count, dtype, g->size);
}

void comm_broadcast(struct comm_group *g, void *buf, size_t bytes, int root) {
  if (g->meta) return;
  int n = mpi_count(bytes, "comm_broadcast");
  MPI_Request request;
  MPI_CALL("MPI_Ibcast", MPI_Ibcast(buf, n, MPI_BYTE, root, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Ibcast");
}

void comm_barrier(struct comm_group *g) {
  if (g->meta) return;
  MPI_Request request;
  MPI_CALL("MPI_Ibarrier", MPI_Ibarrier(g->comm, &request));
  mpi_wait(&request, 1, "MPI_Ibarrier");
}

struct comm_group *comm_group_dup(struct comm_group *g, const char *name) {
  if (g->meta) return meta_group_part(g, g->size, g->rank, 1);
  struct comm_group *dup = fsdp_xcalloc(1, sizeof *dup);
  MPI_Comm comm;
  MPI_Request request;
  MPI_CALL("MPI_Comm_idup", MPI_Comm_idup(g->comm, &comm, &request));
  mpi_wait(&request, 1, "MPI_Comm_idup");
  MPI_CALL("MPI_Comm_set_name", MPI_Comm_set_name(comm, name));
  open_group(dup, comm, "MPI_Comm_set_errhandler");
  return dup;
}

static struct comm_group *split_group(struct comm_group *g, int color, const char *name) {
  struct comm_group *part = fsdp_xcalloc(1, sizeof *part);
  MPI_Comm comm;
  struct watch_op *split = watch_launch("MPI_Comm_split", "MPI_Comm_split");
  MPI_CALL("MPI_Comm_split", MPI_Comm_split(g->comm, color, g->rank, &comm));
  watch_finish(split);
  MPI_CALL("MPI_Comm_set_name", MPI_Comm_set_name(comm, name));
  open_group(part, comm, "MPI_Comm_set_errhandler");
  return part;
}

void comm_mesh_init(struct comm_mesh *mesh, struct comm_group *g, int replicate, int shard) {
  if (replicate < 1 || shard < 1 || replicate * shard != g->size)
    fsdp_fatal("comm_mesh_init: a mesh of %d x %d ranks does not cover a group of %d", replicate, shard, g->size);
  if (g->meta) {
    mesh->shard = meta_group_part(g, shard, g->rank % shard, 1);
    mesh->replicate = meta_group_part(g, replicate, g->rank / shard, shard);
    return;
  }
  /* MPI_Comm_split waits for every rank with no bound; past this barrier, which the
   * watchdog bounds, every rank is there. */
  comm_barrier(g);
  mesh->shard = split_group(g, g->rank / shard, "shard");
  mesh->replicate = split_group(g, g->rank % shard, "replicate");
}

void comm_mesh_free(struct comm_mesh *mesh) {
  comm_group_free(mesh->shard);
  comm_group_free(mesh->replicate);
  mesh->shard = mesh->replicate = NULL;
}

void comm_group_free(struct comm_group *g) {
  transport_free(g);
  free_ring_workspace(g);
  if (!g->meta) MPI_CALL("MPI_Comm_free", MPI_Comm_free(&g->comm));
  free(g);
}

void comm_take_traffic(struct comm_group *g, struct comm_traffic *out) {
  *out = g->traffic;
  memset(&g->traffic, 0, sizeof g->traffic);
}

void host_collective(const struct collective *c) {
  switch (c->kind) {
    case COMM_ALL_GATHER: comm_all_gather(c->group, c->send, c->recv, c->count, c->dtype); break;
    case COMM_REDUCE_SCATTER:
      reduce_scatter_now(c->group, c->workspace, c->send, c->recv, c->count, c->dtype, c->op);
      break;
    case COMM_ALL_REDUCE: comm_all_reduce(c->group, c->recv, c->count, c->dtype, c->op); break;
  }
}

const char *host_collective_call(const struct collective *c) {
  switch (c->kind) {
    case COMM_ALL_GATHER: return "MPI_Iallgather";
    case COMM_REDUCE_SCATTER:
      return use_ring(c->group->size, c->count, c->dtype, c->op) ? "ring reduce-scatter" : "MPI_Ireduce_scatter_block";
    case COMM_ALL_REDUCE: return "MPI_Iallreduce";
  }
  fsdp_fatal("unknown collective kind %d", (int)c->kind);
}

static void run_collective(void *arg) {
  const struct collective *c = arg;
  host_collective(c);
  watch_finish(c->watch);
}

/* The ring's workspace is the group's, grown here at the launch (ring_workspace). */
void host_collective_launch(struct comm_group *g, struct stream *s, const struct collective *c) {
  struct collective run = *c;
  run.workspace = workspace_for(g, s, c);
  run.watch = watch_launch(c->label, host_collective_call(c));
  stream_launch(s, c->label, run_collective, &run, sizeof run);
}

/* Collectives on a stream run where the stream's device runs its work, carried by the
 * group's transport (transport.h); on meta, nothing, charged to the stream's clock. */
static void launch(struct comm_group *g, struct stream *s, const char *label, struct collective *c) {
  if (g->meta) {
    static const char *const KINDS[] = {[COMM_ALL_GATHER] = "all-gather", [COMM_REDUCE_SCATTER] = "reduce-scatter",
                                        [COMM_ALL_REDUCE] = "all-reduce"};
    double bytes = (double)(c->count * comm_dtype_size(c->dtype));
    stream_spend(s, KINDS[c->kind], comm_meta_seconds(g, c->kind, bytes));
    return;
  }
  if (device_kind(stream_device(s)) == DEVICE_META) return;
  snprintf(c->label, sizeof c->label, "%s", label);
  transport_launch(g, s, c);
}

void comm_all_gather_async(struct comm_group *g, struct stream *s, const char *label, const void *send,
                           void *recv, size_t count, enum comm_dtype dtype) {
  g->traffic.all_gather += ring_sent(g, (double)(count * comm_dtype_size(dtype)));
  struct collective c = {COMM_ALL_GATHER, g, NULL, send, recv, count, dtype, COMM_SUM, "", NULL};
  launch(g, s, label, &c);
}

void comm_reduce_scatter_async(struct comm_group *g, struct stream *s, const char *label, const void *send,
                               void *recv, size_t count, enum comm_dtype dtype, enum comm_reduce_op op) {
  check_reducible(dtype, op, true, "comm_reduce_scatter_async"); /* now, not later on the stream's thread */
  g->traffic.reduce_scatter += ring_sent(g, (double)(count * comm_dtype_size(dtype)));
  struct collective c = {COMM_REDUCE_SCATTER, g, NULL, send, recv, count, dtype, op, "", NULL};
  /* A plan counts the workspace that a cpu stream's transport would take (the staged
   * and NCCL transports bring their own). */
  if (g->meta) workspace_for(g, s, &c);
  launch(g, s, label, &c);
}

void comm_all_reduce_async(struct comm_group *g, struct stream *s, const char *label, void *buf, size_t count,
                           enum comm_dtype dtype, enum comm_reduce_op op) {
  check_reducible(dtype, op, false, "comm_all_reduce_async"); /* now, not later on the stream's thread */
  g->traffic.all_reduce += 2 * ring_sent(g, (double)(count * comm_dtype_size(dtype)) / g->size);
  struct collective c = {COMM_ALL_REDUCE, g, NULL, NULL, buf, count, dtype, op, "", NULL};
  launch(g, s, label, &c);
}

void *comm_gather_bytes(struct comm_group *g, const void *send, size_t bytes, int root, size_t *total_bytes) {
  FSDP_CHECK(!g->meta);
  int n = mpi_count(bytes, "comm_gather_bytes");
  int *counts = NULL, *displs = NULL;
  char *all = NULL;
  if (g->rank == root) {
    counts = fsdp_xcalloc((size_t)g->size, sizeof *counts);
    displs = fsdp_xcalloc((size_t)g->size, sizeof *displs);
  }
  MPI_Request request;
  MPI_CALL("MPI_Igather", MPI_Igather(&n, 1, MPI_INT, counts, 1, MPI_INT, root, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Igather");
  if (g->rank == root) {
    size_t total = 0;
    for (int r = 0; r < g->size; r++) {
      displs[r] = mpi_count(total, "comm_gather_bytes (total)");
      total += (size_t)counts[r];
    }
    mpi_count(total, "comm_gather_bytes (total)");
    all = fsdp_xmalloc(total ? total : 1);
    *total_bytes = total;
  }
  MPI_CALL("MPI_Igatherv", MPI_Igatherv(send, n, MPI_BYTE, all, counts, displs, MPI_BYTE, root, g->comm, &request));
  mpi_wait(&request, 1, "MPI_Igatherv");
  free(counts);
  free(displs);
  return all;
}

void comm_abort(int exit_code) {
  /* Taken if it can be: another thread may be inside MPI, and MPI_Abort would then
   * break the one-call-at-a-time rule; a moment later the job ends anyway. */
  for (int tries = 0; tries < 1000 && pthread_mutex_trylock(&mpi_lock) != 0; tries++) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  if (mpi_is_running()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  exit(exit_code); /* MPI_Abort should not return; this keeps the _Noreturn promise */
}
