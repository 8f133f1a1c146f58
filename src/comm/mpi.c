/* Process groups and collectives over Open MPI. MPI stays behind this file: the
 * layers above see only struct comm_group and the enums of comm.h. */
#include "fsdp/comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "fsdp/error.h"
#include "fsdp/log.h"

struct comm_group {
  MPI_Comm comm;
  int rank; /* cached: asked for on every collective */
  int size;
};

static struct comm_group world_group = {MPI_COMM_NULL, 0, 1};
static struct comm_group self_group = {MPI_COMM_NULL, 0, 1};

static const char *thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown thread level";
  }
}

/* Ends the job on any MPI failure; fsdp_fatal puts the rank in front of the message
 * once the job has more than one. */
static void check_mpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  text[length] = '\0';
  fsdp_fatal("%s failed: %s", call, length ? text : "(no error text)");
}

/* A failed query counts as "not running" rather than going through check_mpi:
 * this is called on the way down from fsdp_fatal itself. */
static bool mpi_is_running(void) {
  int initialised = 0, finalised = 0;
  return MPI_Initialized(&initialised) == MPI_SUCCESS && initialised &&
         MPI_Finalized(&finalised) == MPI_SUCCESS && !finalised;
}

/* Installed into fsdp_fatal: a failing rank must take its peers down, or they would
 * wait forever in the next collective. */
static void abort_job(int exit_code) {
  if (world_group.size > 1) comm_abort(exit_code);
  exit(exit_code);
}

static void open_group(struct comm_group *g, MPI_Comm comm, const char *name) {
  g->comm = comm;
  /* Return codes instead of MPI's default abort, so that failures reach check_mpi
   * and name the call that failed. */
  check_mpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), name);
  check_mpi(MPI_Comm_rank(comm, &g->rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &g->size), "MPI_Comm_size");
}

void comm_init(int *argc, char ***argv) {
  if (world_group.comm != MPI_COMM_NULL) return; /* MPI starts only once per process */
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  open_group(&world_group, MPI_COMM_WORLD, "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
  open_group(&self_group, MPI_COMM_SELF, "MPI_Comm_set_errhandler(MPI_COMM_SELF)");
  fsdp_log_set_rank(world_group.rank, world_group.size);
  fsdp_set_abort_handler(abort_job);
  /* Asked for now so that the comm streams of DESIGN.md, which call collectives
   * from worker threads, need no change here. */
  if (provided < MPI_THREAD_MULTIPLE)
    fsdp_fatal("MPI provides %s but fsdp needs MPI_THREAD_MULTIPLE "
               "(is Open MPI built with thread support?)",
               thread_level_name(provided));
}

void comm_finalize(void) {
  if (!mpi_is_running()) return;
  check_mpi(MPI_Finalize(), "MPI_Finalize");
}

static struct comm_group *started_group(struct comm_group *g, const char *caller) {
  if (g->comm == MPI_COMM_NULL) fsdp_fatal("%s called before comm_init", caller);
  return g;
}

struct comm_group *comm_world(void) { return started_group(&world_group, "comm_world"); }
struct comm_group *comm_self(void) { return started_group(&self_group, "comm_self"); }

int comm_rank(const struct comm_group *g) { return g->rank; }
int comm_size(const struct comm_group *g) { return g->size; }

size_t comm_dtype_size(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return sizeof(float);
    case COMM_F64: return sizeof(double);
    case COMM_I32: return sizeof(int32_t);
    case COMM_I64: return sizeof(int64_t);
  }
  fsdp_fatal("unknown comm dtype %d", (int)dtype);
}

static MPI_Datatype mpi_datatype(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return MPI_FLOAT;
    case COMM_F64: return MPI_DOUBLE;
    case COMM_I32: return MPI_INT32_T;
    case COMM_I64: return MPI_INT64_T;
  }
  fsdp_fatal("unknown comm dtype %d", (int)dtype);
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

void comm_all_gather(struct comm_group *g, const void *send, void *recv, size_t count,
                     enum comm_dtype dtype) {
  int n = mpi_count(count, "comm_all_gather");
  /* Compared as integers: recv may be NULL when count is 0, and NULL + 0 is undefined. */
  uintptr_t own_slice = (uintptr_t)recv + (size_t)g->rank * count * comm_dtype_size(dtype);
  const void *mpi_send = (uintptr_t)send == own_slice ? MPI_IN_PLACE : send;
  MPI_Datatype type = mpi_datatype(dtype);
  check_mpi(MPI_Allgather(mpi_send, n, type, recv, n, type, g->comm), "MPI_Allgather");
}

void comm_reduce_scatter(struct comm_group *g, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op) {
  int n = mpi_count(count, "comm_reduce_scatter");
  MPI_Op mop = mpi_op(op, dtype, "comm_reduce_scatter");
  check_mpi(MPI_Reduce_scatter_block(send, recv, n, mpi_datatype(dtype), mop, g->comm),
            "MPI_Reduce_scatter_block");
  if (op == COMM_AVG) divide_by_size(recv, count, dtype, g->size);
}

void comm_all_reduce(struct comm_group *g, void *buf, size_t count, enum comm_dtype dtype,
                     enum comm_reduce_op op) {
  int n = mpi_count(count, "comm_all_reduce");
  MPI_Op mop = mpi_op(op, dtype, "comm_all_reduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, n, mpi_datatype(dtype), mop, g->comm),
            "MPI_Allreduce");
  if (op == COMM_AVG) divide_by_size(buf, count, dtype, g->size);
}

void comm_broadcast(struct comm_group *g, void *buf, size_t bytes, int root) {
  int n = mpi_count(bytes, "comm_broadcast");
  check_mpi(MPI_Bcast(buf, n, MPI_BYTE, root, g->comm), "MPI_Bcast");
}

void comm_barrier(struct comm_group *g) { check_mpi(MPI_Barrier(g->comm), "MPI_Barrier"); }

void comm_abort(int exit_code) {
  if (mpi_is_running()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  exit(exit_code); /* MPI_Abort should not return; this keeps the _Noreturn promise */
}
