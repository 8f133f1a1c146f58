/* Private to src/comm: a reduce-scatter built from point-to-point messages, which
 * comm_reduce_scatter uses instead of Open MPI's (several times slower on one machine:
 * docs/benchmarks.md, "Collectives") when comm_set_reduce_scatter_algorithm asks for
 * it or AUTO picks it. */
#ifndef FSDP_COMM_RING_H
#define FSDP_COMM_RING_H

#include <mpi.h>
#include <stddef.h>

#include "fsdp/comm.h"

/* recv (count elements) = sum over the ranks of comm of send[rank * count .. (rank+1) * count),
 * for COMM_F32 and COMM_F64 only. The W-1 steps of a ring: at each one a rank passes a
 * partial sum to rank+1, takes another from rank-1 and adds its own part. send is only
 * read; recv, which must not overlap it, also holds the partials. Every element is
 * summed in the same order on every call: starting at its owner's successor and going
 * round the ring. Collective: every rank of comm calls it with the same count. MPI is
 * called as mpi_call.h says, one call at a time. */
void ring_reduce_scatter_sum(MPI_Comm comm, int rank, int size, const void *send, void *recv, size_t count,
                             enum comm_dtype dtype);

#endif
