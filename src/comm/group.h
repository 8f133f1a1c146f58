/* Private to src/comm: what a group is, and what a collective launched on a stream
 * carries, shared by the MPI collectives (mpi.c) and the transports that run them on
 * device streams (transport.c, nccl.c, staged.c). */
#ifndef FSDP_COMM_GROUP_H
#define FSDP_COMM_GROUP_H

#include <mpi.h>
#include <stddef.h>

#include "fsdp/comm.h"
#include "fsdp/stream.h"

struct transport; /* transport.c: what carries the group's collectives on streams, chosen at its first */
struct watch_op;  /* watchdog.h */

/* A group is an MPI communicator, or a meta group (comm_meta_group): ranks that exist
 * only in a plan, whose collectives move nothing and count what they would send. */
struct comm_group {
  MPI_Comm comm;
  int rank; /* cached: asked for on every collective */
  int size;
  int meta;
  /* Where the group's buffers live: host memory for MPI, the meta device for a plan. */
  struct device *device;
  /* The ring reduce-scatter's message slots (MEM_COMM), grown to the largest call
   * so far and kept: collectives on one group run one at a time, and a buffer that
   * stays makes the memory of a training step the same in every step. */
  void *ring_workspace;
  size_t ring_workspace_bytes;
  struct comm_traffic traffic;
  /* Whether its ranks are on more than one machine (MPI's shared-memory domains). */
  int spans_machines;
  struct transport *transport;
  /* A meta group's links, and how many ranks of the whole job apart its neighbours are. */
  struct comm_links links;
  int stride;
};

/* A meta group of g's links whose neighbours are `stride` of g's ranks apart: a dup's (1),
 * a mesh's shard (1) and replicate (S) groups (meta_group.c). */
struct comm_group *meta_group_part(const struct comm_group *g, int size, int rank, int stride);

/* What a collective launched on a stream needs, copied into the stream's queue. */
struct collective {
  enum comm_kind kind;
  struct comm_group *group;
  void *workspace; /* the ring's, for a reduce-scatter that takes it (host collectives) */
  const void *send;
  void *recv; /* the buffer of an all-reduce */
  size_t count;
  enum comm_dtype dtype;
  enum comm_reduce_op op;
  char label[STREAM_LABEL_MAX]; /* what the watchdog names when it times out */
  struct watch_op *watch;       /* its entry in the watchdog (watchdog.h), from its launch */
};

/* Runs c over MPI on host memory, on the calling thread. */
void host_collective(const struct collective *c);
/* The MPI call host_collective waits in for c, which the watchdog names. */
const char *host_collective_call(const struct collective *c);
/* The bytes of ring workspace host_collective needs for c (0: none). */
size_t host_collective_workspace_bytes(const struct collective *c);
/* Launches c on a cpu stream, to run over MPI on the stream's own thread. */
void host_collective_launch(struct comm_group *g, struct stream *s, const struct collective *c);

#endif
