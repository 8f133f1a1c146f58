/* Process groups and collectives over Open MPI (and NCCL on cuda streams). Every call is checked: a failure
 * ends the whole job with a message naming the rank and the collective. */
#ifndef FSDP_COMM_H
#define FSDP_COMM_H

#include <stddef.h>

#include "fsdp/dtype.h"

struct device;
struct stream;

/* COMM_BF16 and COMM_F16 are 16-bit floats held as their bit patterns (fsdp/dtype.h).
 * Both can be all-gathered; only COMM_BF16 can be reduced, and only by
 * comm_reduce_scatter with COMM_SUM or COMM_AVG. */
enum comm_dtype { COMM_F32, COMM_F64, COMM_I32, COMM_I64, COMM_BF16, COMM_F16 };
enum comm_reduce_op { COMM_SUM, COMM_AVG, COMM_MAX };

struct comm_group; /* opaque: the runtime above never sees MPI */

/* Starts MPI (once per process, at MPI_THREAD_SERIALIZED: the comm streams' threads
 * call it one at a time) and installs an abort handler that takes every rank down
 * when one fails. */
void comm_init(int *argc, char ***argv);
void comm_finalize(void);

/* All ranks of the job, and this process alone (for single-process references). */
struct comm_group *comm_world(void);
struct comm_group *comm_self(void);

int comm_rank(const struct comm_group *g);
int comm_size(const struct comm_group *g);

/* recv[r * count .. (r+1) * count) = send of rank r; send may alias recv + rank * count. */
void comm_all_gather(struct comm_group *g, const void *send, void *recv, size_t count,
                     enum comm_dtype dtype);
/* recv (count elements) = op over ranks of send[rank * count .. (rank+1) * count).
 * COMM_BF16 always goes round the ring (src/comm/ring.h), whatever
 * comm_set_algorithm says: each hop adds in fp32 and rounds to bf16,
 * as NCCL's ring does; COMM_AVG divides the last hop's fp32 sum by the world size
 * before that rounding. */
void comm_reduce_scatter(struct comm_group *g, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op);
/* In place: buf = op over ranks of buf. */
void comm_all_reduce(struct comm_group *g, void *buf, size_t count, enum comm_dtype dtype,
                     enum comm_reduce_op op);
void comm_broadcast(struct comm_group *g, void *buf, size_t bytes, int root);
void comm_barrier(struct comm_group *g);

/* Ranks that exist only in a plan (`fsdp plan` on the meta device): this process is
 * rank `rank` of `size`, its collectives move nothing, and what they would send is
 * counted (comm_take_traffic); buffers such as the ring's workspace are allocated on
 * the meta device, as they would be for real. */
struct comm_group *comm_meta_group(struct device *meta, int size, int rank);

/* What a meta group's collectives take (fsdp plan's step-time model; fsdp/meta_clock.h):
 * each is charged to its stream as a ring's W - 1 steps (twice that for an all-reduce),
 * each step a part of the buffer over the slowest hop and that hop's latency. Ranks
 * ranks_per_node at a time share a machine, which has nics_per_node NICs of `inter` each.
 * A ring within a machine runs at intra. Across machines, each step takes a part out of
 * every machine for every group of this kind there (the machine's ranks over the group's
 * ranks on it): the groups share the machine's NICs, and one group's traffic spreads over
 * as many NICs as it has ranks there (as NCCL's rings do), never above intra. So with a
 * NIC a rank (GPUs on rails) a ring of r ranks a machine runs at r x inter, and with one
 * NIC a machine every group crossing it shares that one. A group without links is
 * charged nothing. Dups and meshes of a meta group take its links: a shard group is
 * consecutive ranks, a replicate group every S-th. */
struct comm_link {
  double bytes_per_s; /* one way: a rank's within a machine, one NIC's between machines */
  double latency_s;   /* of one step of a ring */
};
struct comm_links {
  int ranks_per_node, nics_per_node; /* nics_per_node 0: one a rank */
  struct comm_link intra, inter;
};
void comm_meta_set_links(struct comm_group *g, const struct comm_links *links);
enum comm_kind { COMM_ALL_GATHER, COMM_REDUCE_SCATTER, COMM_ALL_REDUCE };
/* Seconds a collective of `kind` takes on meta group g: bytes are one rank's part of an
 * all-gather or a reduce-scatter, or the buffer of an all-reduce. */
double comm_meta_seconds(const struct comm_group *g, enum comm_kind kind, double bytes);

/* Bytes this rank has sent (as many are received) in the collectives launched on the
 * group since the last call, counted as ring algorithms send them: (W-1) parts for an
 * all-gather or a reduce-scatter, 2 (W-1)/W of the buffer for an all-reduce. */
struct comm_traffic {
  double all_gather, reduce_scatter, all_reduce;
};
void comm_take_traffic(struct comm_group *g, struct comm_traffic *out);

/* A new communicator over the same ranks. Collectives on one group must be called
 * in the same order on every rank, so each comm stream gets a group of its own. */
struct comm_group *comm_group_dup(struct comm_group *g, const char *name);
void comm_group_free(struct comm_group *g);

/* HSDP's 2-D mesh of a group of R·S ranks: rank r shards within its shard group, the
 * S consecutive ranks from r - r % S (a node's, when a node runs S ranks), at
 * position r % S, and is replicated across its replicate group, the R ranks r % S,
 * r % S + S, ..., at position r / S. Over a meta group, meta groups of S and R ranks. */
struct comm_mesh {
  struct comm_group *shard, *replicate;
};
void comm_mesh_init(struct comm_mesh *mesh, struct comm_group *g, int replicate, int shard);
void comm_mesh_free(struct comm_mesh *mesh);

/* The same collectives, launched on a stream (fsdp/device.h): they run in stream order,
 * and the caller records an event to know when they are done. Buffers must stay alive
 * and untouched until then. label names the span in profile traces. On a cpu stream
 * the collective runs over MPI on the stream's thread; on a cuda stream, over NCCL when
 * every rank of the group has a GPU of its own, else staged through pinned host memory
 * and MPI (FSDP_COMM_TRANSPORT=nccl|staged forces one; docs/architecture.md). A group
 * carries collectives of one stream kind, and its staged ones are launched on one stream. */
void comm_all_gather_async(struct comm_group *g, struct stream *s, const char *label, const void *send,
                           void *recv, size_t count, enum comm_dtype dtype);
void comm_reduce_scatter_async(struct comm_group *g, struct stream *s, const char *label, const void *send,
                               void *recv, size_t count, enum comm_dtype dtype, enum comm_reduce_op op);
void comm_all_reduce_async(struct comm_group *g, struct stream *s, const char *label, void *buf, size_t count,
                           enum comm_dtype dtype, enum comm_reduce_op op);

/* How comm_all_gather and comm_reduce_scatter (kind) move their bytes on the CPU: Open
 * MPI's collective, a ring of point-to-point messages (src/comm/ring.c), or AUTO. AUTO
 * reduce-scatters on the faster of the two for the message size, as measured by
 * bench/collectives.sh (docs/benchmarks.md), and all-gathers on the ring where the group
 * spans machines: Open MPI's all-gather sends a rank's part to every other rank, so each
 * machine's link carries a part for every rank off it, where the ring's carries one a
 * step (12 parts against 7 a machine on 4 machines of 2 ranks). */
enum comm_algorithm { COMM_ALGORITHM_AUTO, COMM_ALGORITHM_MPI, COMM_ALGORITHM_RING };
void comm_set_algorithm(enum comm_kind kind, enum comm_algorithm a);

/* Concatenates every rank's bytes on root, in rank order: returns a malloc'd buffer
 * (free it) with the total in *total_bytes on root, NULL elsewhere. */
void *comm_gather_bytes(struct comm_group *g, const void *send, size_t bytes, int root, size_t *total_bytes);

/* The watchdog: a collective, blocking or on a stream, that has not finished `seconds`
 * after it started ends the whole job with a message naming this rank, the
 * collective's label ("all-gather block 3") and the MPI call. Default 600 s, as NCCL's. */
void comm_set_timeout(double seconds);
double comm_timeout(void);

/* Ends every rank of the job with the given exit code. */
_Noreturn void comm_abort(int exit_code);

size_t comm_dtype_size(enum comm_dtype dtype);
/* The collectives' element type for a dtype (include/fsdp/dtype.h). */
enum comm_dtype comm_dtype_of(enum dtype d);

#endif
