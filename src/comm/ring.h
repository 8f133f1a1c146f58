/* Private to src/comm: a reduce-scatter and an all-gather built from point-to-point
 * messages, which comm_reduce_scatter and comm_all_gather use instead of Open MPI's when
 * comm_set_algorithm asks for them or AUTO picks them (Open MPI's reduce-scatter is
 * several times slower on one machine: docs/benchmarks.md, "Collectives"; its
 * all-gather sends more across machines: fsdp/comm.h), and the reduce-scatter always
 * for bf16, which Open MPI cannot reduce. */
#ifndef FSDP_COMM_RING_H
#define FSDP_COMM_RING_H

#include <mpi.h>
#include <stddef.h>

#include "fsdp/comm.h"

/* recv (count elements) = the sum (op COMM_SUM) or average (COMM_AVG) over the ranks of
 * comm of send[rank * count .. (rank+1) * count), for COMM_F32, COMM_F64 and COMM_BF16.
 * The W-1 steps of a ring: at each one a rank passes a partial sum to rank+1, takes
 * another from rank-1 and adds its own part. send is only read; recv, which must not
 * overlap it, also holds the partials. Every element is summed in the same order on
 * every call: starting at its owner's successor and going round the ring, so that
 * the element owned by rank c is ((v[c+1] + v[c+2]) + ...) + v[c] (ranks mod W), each
 * add rounded to dtype. COMM_BF16 adds in fp32 (both operands widened, the sum
 * rounded to bf16). COMM_AVG divides the last add's sum by W before rounding it (with
 * W = 1, recv is send's values). Collective: every rank of comm calls it with the same
 * count. MPI is called as mpi_call.h says, one call at a time. */
void ring_reduce_scatter(MPI_Comm comm, int rank, int size, void *workspace, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op);

/* The bytes of workspace ring_reduce_scatter needs: the slots of the messages in flight. */
size_t ring_workspace_bytes(int size, size_t count, enum comm_dtype dtype);

/* recv (size * bytes) = every rank's send (bytes), in rank order: the W-1 steps of a
 * ring, at each one a rank passing the block it took last to rank+1 (its own first)
 * and taking another from rank-1, straight into recv. send may be recv's own block.
 * Collective, called as ring_reduce_scatter is. */
void ring_all_gather(MPI_Comm comm, int rank, int size, const void *send, void *recv, size_t bytes);

#endif
