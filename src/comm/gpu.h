/* Private to src/comm: collectives on cuda streams. A group used there gets, at its
 * first collective on a cuda stream, one of two transports (gpu.c chooses):
 *   nccl    (nccl.c)   NCCL calls enqueued on the stream, when every rank of the group
 *                      has a GPU of its own;
 *   staged  (staged.c) device -> pinned host -> MPI -> device, for ranks that share a
 *                      GPU (NCCL refuses two ranks on one device).
 * FSDP_COMM_TRANSPORT=nccl|staged forces one (tests). */
#ifndef FSDP_COMM_GPU_H
#define FSDP_COMM_GPU_H

#include "group.h"

/* Launches c on the cuda stream s (making the group's transport first if need be). */
void gpu_launch(struct comm_group *g, struct stream *s, const struct collective *c);
/* Frees the group's transport, after the work launched on it has finished. */
void gpu_group_free(struct comm_group *g);

struct nccl_comm;
/* The group's NCCL communicator on CUDA device `ordinal`: the unique id is made on
 * rank 0 and broadcast over the group's MPI communicator. Collective. */
struct nccl_comm *nccl_open(struct comm_group *g, int ordinal);
void nccl_launch(struct nccl_comm *n, struct stream *s, const struct collective *c);
void nccl_close(struct nccl_comm *n);

struct staged_comm;
struct staged_comm *staged_open(struct comm_group *g, struct device *d, int ordinal);
void staged_launch(struct staged_comm *t, struct stream *s, const struct collective *c);
void staged_close(struct staged_comm *t);

#endif
