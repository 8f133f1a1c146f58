/* Private to src/comm: what carries a group's collectives launched on device streams,
 * chosen at the group's first one (transport.c):
 *   MPI on the stream's thread  (mpi.c)    on cpu streams;
 *   nccl    (nccl.c)    NCCL calls enqueued on a cuda stream, when every rank of the
 *                       group has a GPU of its own;
 *   staged  (staged.c)  device -> pinned host -> MPI -> device, for ranks that share a
 *                       GPU (NCCL refuses two ranks on one device), and on cpu streams
 *                       when forced, so that it runs without a GPU too.
 * FSDP_COMM_TRANSPORT=nccl|staged forces one (tests). */
#ifndef FSDP_COMM_TRANSPORT_H
#define FSDP_COMM_TRANSPORT_H

#include "group.h"

/* Launches c on the cpu or cuda stream s (choosing the group's transport first if need be). */
void transport_launch(struct comm_group *g, struct stream *s, const struct collective *c);
/* Frees the group's transport, once the work launched on it is done (it waits for it). */
void transport_free(struct comm_group *g);

struct nccl_comm;
/* The group's NCCL communicator on the GPU of stream s: the unique id is made on rank 0
 * and broadcast over the group's MPI communicator. Collective. */
struct nccl_comm *nccl_open(struct comm_group *g, struct stream *s);
void nccl_launch(struct nccl_comm *n, struct stream *s, const struct collective *c);
void nccl_close(struct nccl_comm *n);

struct staged_comm;
struct staged_comm *staged_open(struct device *d);
void staged_launch(struct staged_comm *t, struct stream *s, const struct collective *c);
void staged_close(struct staged_comm *t);

#endif
