/* Ring reduce-scatter over MPI point-to-point messages (see ring.h). */
#include "ring.h"

#include <string.h>

#include "fsdp/error.h"
#include "fsdp/memory.h"
#include "mpi_call.h"

/* Messages go in segments, so that each partial received is added while it is still in
 * cache (whole chunks took 2.7x as long at 64 MiB, W=2) and no MPI count comes near
 * INT_MAX whatever count is. Several are in flight, because a wait that outlasts
 * mpi_wait's spin sleeps: one 256 KiB segment at a time took 3x as long as four from
 * 4 MiB up at W=2, where four did as well as 4 MiB segments one at a time, and better
 * than those at W=4. */
enum { SEGMENT_BYTES = 256 << 10, IN_FLIGHT = 4 };

/* One tag for every message: MPI's own collectives travel in a context of their own,
 * and messages between two ranks of one communicator arrive in the order they were
 * sent, so neither segments, steps nor successive calls can be confused. Below 32767,
 * the smallest MPI_TAG_UB the standard allows. */
enum { RING_TAG = 0x5253 };

struct ring {
  MPI_Comm comm;
  MPI_Datatype type;
  int next, prev;
  size_t count, elem, segment; /* segment: elements per message */
  char *incoming;              /* IN_FLIGHT segments, one slot per message in flight */
};

static size_t segment_length(const struct ring *r, size_t j) {
  size_t left = r->count - j * r->segment;
  return left < r->segment ? left : r->segment;
}

static char *slot(const struct ring *r, size_t j) { return r->incoming + (j % IN_FLIGHT) * r->segment * r->elem; }

/* Segment j of out goes to the next rank; the previous rank's segment j comes into its slot. */
static void start_segment(const struct ring *r, const char *out, size_t j, MPI_Request requests[2]) {
  int n = (int)segment_length(r, j);
  MPI_CALL("MPI_Irecv (ring reduce-scatter)",
           MPI_Irecv(slot(r, j), n, r->type, r->prev, RING_TAG, r->comm, &requests[0]));
  MPI_CALL("MPI_Isend (ring reduce-scatter)",
           MPI_Isend(out + j * r->segment * r->elem, n, r->type, r->next, RING_TAG, r->comm, &requests[1]));
}

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
  struct ring r = {.comm = comm,
                   .type = dtype == COMM_F32 ? MPI_FLOAT : MPI_DOUBLE,
                   .next = (rank + 1) % size,
                   .prev = (rank + size - 1) % size,
                   .count = count,
                   .elem = elem,
                   .segment = SEGMENT_BYTES / elem};
  if (r.segment > count) r.segment = count;
  size_t segments = (count + r.segment - 1) / r.segment;
  r.incoming = mem_alloc((segments < IN_FLIGHT ? segments : IN_FLIGHT) * r.segment * elem, MEM_COMM);
  MPI_Request requests[IN_FLIGHT][2];
  const char *own_base = send;
  char *partial = recv;

  /* At step k this rank sends chunk rank-k-1 and receives chunk rank-k-2; after W-1
   * steps the chunk it receives is its own. Step 0 sends straight from send. */
  for (int step = 0; step < size - 1; step++) {
    size_t out_chunk = (size_t)((rank - step - 1 + size) % size);
    size_t in_chunk = (size_t)((rank - step - 2 + 2 * size) % size);
    const char *out = step == 0 ? own_base + out_chunk * count * elem : partial;
    const char *own = own_base + in_chunk * count * elem;
    for (size_t j = 0; j < segments && j < IN_FLIGHT; j++) start_segment(&r, out, j, requests[j]);
    for (size_t j = 0; j < segments; j++) {
      mpi_wait(requests[j % IN_FLIGHT], 2, "ring reduce-scatter");
      /* Segment j is sent: the new partial overwrites it, and its slot is free again. */
      size_t off = j * r.segment * elem, n = segment_length(&r, j);
      if (dtype == COMM_F32)
        add_f32((float *)(partial + off), (const float *)slot(&r, j), (const float *)(own + off), n);
      else
        add_f64((double *)(partial + off), (const double *)slot(&r, j), (const double *)(own + off), n);
      if (j + IN_FLIGHT < segments) start_segment(&r, out, j + IN_FLIGHT, requests[j % IN_FLIGHT]);
    }
  }
  mem_free(r.incoming);
}
