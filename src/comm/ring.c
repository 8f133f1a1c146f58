/* Ring reduce-scatter over MPI point-to-point messages (see ring.h). */
#include "ring.h"

#include <string.h>

#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "mpi_call.h"

/* Messages go in segments, so that each partial received is added while it is still
 * in cache (whole chunks took 2.7x as long at 64 MiB and more, W=2; segments of 256 KiB
 * to 4 MiB measured the same, and the smallest keeps the scratch small), and so that
 * no MPI count comes near INT_MAX whatever count is. */
enum { SEGMENT_BYTES = 256 << 10 };

/* One tag for every message: MPI's own collectives travel in a context of their own,
 * and messages between two ranks of one communicator arrive in the order they were
 * sent, so neither steps nor successive calls can be confused. Below 32767, the
 * smallest MPI_TAG_UB the standard allows. */
enum { RING_TAG = 0x5253 };

static void add_f32(float *restrict out, const float *restrict partial, const float *restrict own, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = partial[i] + own[i];
}

static void add_f64(double *restrict out, const double *restrict partial, const double *restrict own, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = partial[i] + own[i];
}

void ring_reduce_scatter_sum(MPI_Comm comm, int rank, int size, const void *send, void *recv, size_t count,
                             enum comm_dtype dtype) {
  if (dtype != COMM_F32 && dtype != COMM_F64)
    fsdp_fatal("ring_reduce_scatter_sum: dtype %d is not COMM_F32 or COMM_F64", (int)dtype);
  if (count == 0) return; /* send and recv may be NULL */
  size_t elem = comm_dtype_size(dtype);
  if (size == 1) {
    memcpy(recv, send, count * elem);
    return;
  }
  MPI_Datatype type = dtype == COMM_F32 ? MPI_FLOAT : MPI_DOUBLE;
  size_t segment = SEGMENT_BYTES / elem;
  if (segment > count) segment = count;
  void *incoming = mem_alloc(segment * elem, MEM_COMM);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const char *own_base = send;
  char *partial = recv;

  /* At step k this rank sends chunk rank-k-1 and receives chunk rank-k-2; after W-1
   * steps the chunk it receives is its own. */
  for (int step = 0; step < size - 1; step++) {
    size_t out_chunk = (size_t)((rank - step - 1 + size) % size);
    size_t in_chunk = (size_t)((rank - step - 2 + 2 * size) % size);
    const char *out = step == 0 ? own_base + out_chunk * count * elem : partial;
    const char *own = own_base + in_chunk * count * elem;
    for (size_t off = 0; off < count; off += segment) {
      size_t n = count - off < segment ? count - off : segment;
      MPI_Request requests[2];
      MPI_CALL("MPI_Irecv (ring reduce-scatter)",
               MPI_Irecv(incoming, (int)n, type, prev, RING_TAG, comm, &requests[0]));
      MPI_CALL("MPI_Isend (ring reduce-scatter)",
               MPI_Isend(out + off * elem, (int)n, type, next, RING_TAG, comm, &requests[1]));
      mpi_wait(requests, 2, "ring reduce-scatter");
      /* The segment just sent is free again: the new partial overwrites it. */
      if (dtype == COMM_F32)
        add_f32((float *)(partial + off * elem), incoming, (const float *)(own + off * elem), n);
      else
        add_f64((double *)(partial + off * elem), incoming, (const double *)(own + off * elem), n);
    }
  }
  mem_free(incoming);
}
