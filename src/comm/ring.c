/* Ring reduce-scatter and all-gather over MPI point-to-point messages (see ring.h). */
#include "ring.h"

#include <stdint.h>
#include <string.h>

#include "fsdp/dtype.h"
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

/* n elements of out go to the next rank; as many from the previous rank come into in. */
static void pass_on(const struct ring *r, const void *out, void *in, size_t n, MPI_Request requests[2]) {
  MPI_CALL("MPI_Irecv (ring)", MPI_Irecv(in, (int)n, r->type, r->prev, RING_TAG, r->comm, &requests[0]));
  MPI_CALL("MPI_Isend (ring)", MPI_Isend(out, (int)n, r->type, r->next, RING_TAG, r->comm, &requests[1]));
}

/* Segment j of out goes to the next rank; the previous rank's segment j comes into its slot. */
static void start_segment(const struct ring *r, const char *out, size_t j, MPI_Request requests[2]) {
  pass_on(r, out + j * r->segment * r->elem, slot(r, j), segment_length(r, j), requests);
}

static void add_f32(float *restrict out, const float *restrict partial, const float *restrict own, size_t n,
                    float divisor) {
  for (size_t i = 0; i < n; i++) out[i] = (partial[i] + own[i]) / divisor;
}

static void add_f64(double *restrict out, const double *restrict partial, const double *restrict own, size_t n,
                    double divisor) {
  for (size_t i = 0; i < n; i++) out[i] = (partial[i] + own[i]) / divisor;
}

/* Widened a block at a time on the stack, where dtype.c's conversion loops vectorize.
 * The fp32 sum of two bf16 values, rounded once more to bf16, is their correctly rounded
 * bf16 sum: fp32's 24 significant bits are at least 2 * 8 + 2, bf16's twice and two
 * more, so the first rounding never changes the second (double rounding is innocuous). */
static void add_bf16(uint16_t *restrict out, const uint16_t *restrict partial, const uint16_t *restrict own,
                     size_t n, float divisor) {
  enum { BLOCK = 1024 };
  float sum[BLOCK], mine[BLOCK];
  for (size_t s = 0; s < n; s += BLOCK) {
    size_t m = n - s < BLOCK ? n - s : BLOCK;
    dtype_unpack(DTYPE_BF16, partial + s, sum, m);
    dtype_unpack(DTYPE_BF16, own + s, mine, m);
    for (size_t i = 0; i < m; i++) sum[i] = (sum[i] + mine[i]) / divisor;
    dtype_pack(DTYPE_BF16, sum, out + s, m);
  }
}

/* The combining step of a hop: out = (partial + own) / divisor, divisor being 1 (exact)
 * except at the last hop of an average. dtype is one that ring_datatype admits. */
static void add(enum comm_dtype dtype, char *out, const char *partial, const char *own, size_t n, int divisor) {
  if (dtype == COMM_F32)
    add_f32((float *)out, (const float *)partial, (const float *)own, n, (float)divisor);
  else if (dtype == COMM_F64)
    add_f64((double *)out, (const double *)partial, (const double *)own, n, divisor);
  else
    add_bf16((uint16_t *)out, (const uint16_t *)partial, (const uint16_t *)own, n, (float)divisor);
}

static MPI_Datatype ring_datatype(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return MPI_FLOAT;
    case COMM_F64: return MPI_DOUBLE;
    case COMM_BF16: return MPI_UINT16_T; /* moved as bits, added by add_bf16 */
    default: fsdp_fatal("ring_reduce_scatter: dtype %d is not COMM_F32, COMM_F64 or COMM_BF16", (int)dtype);
  }
}

static size_t segment_elements(size_t count, size_t elem) {
  size_t segment = SEGMENT_BYTES / elem;
  return segment < count ? segment : count;
}

size_t ring_workspace_bytes(int size, size_t count, enum comm_dtype dtype) {
  if (size == 1 || count == 0) return 0;
  size_t elem = comm_dtype_size(dtype), segment = segment_elements(count, elem);
  size_t segments = (count + segment - 1) / segment;
  return (segments < IN_FLIGHT ? segments : IN_FLIGHT) * segment * elem;
}

void ring_reduce_scatter(MPI_Comm comm, int rank, int size, void *workspace, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op) {
  MPI_Datatype type = ring_datatype(dtype);
  if (op != COMM_SUM && op != COMM_AVG) fsdp_fatal("ring_reduce_scatter: op %d is not COMM_SUM or COMM_AVG", (int)op);
  if (count == 0) return; /* send and recv may be NULL */
  size_t elem = comm_dtype_size(dtype);
  if (size == 1) {
    memcpy(recv, send, count * elem);
    return;
  }
  struct ring r = {.comm = comm,
                   .type = type,
                   .next = (rank + 1) % size,
                   .prev = (rank + size - 1) % size,
                   .count = count,
                   .elem = elem,
                   .segment = segment_elements(count, elem)};
  size_t segments = (count + r.segment - 1) / r.segment;
  r.incoming = workspace;
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
    int divisor = op == COMM_AVG && step == size - 2 ? size : 1;
    for (size_t j = 0; j < segments && j < IN_FLIGHT; j++) start_segment(&r, out, j, requests[j]);
    for (size_t j = 0; j < segments; j++) {
      mpi_wait(requests[j % IN_FLIGHT], 2, "ring reduce-scatter");
      /* Segment j is sent: the new partial overwrites it, and its slot is free again. */
      size_t off = j * r.segment * elem;
      add(dtype, partial + off, slot(&r, j), own + off, segment_length(&r, j), divisor);
      if (j + IN_FLIGHT < segments) start_segment(&r, out, j + IN_FLIGHT, requests[j % IN_FLIGHT]);
    }
  }
}

void ring_all_gather(MPI_Comm comm, int rank, int size, const void *send, void *recv, size_t bytes) {
  if (bytes == 0) return; /* send and recv may be NULL */
  char *blocks = recv;
  if (send != blocks + (size_t)rank * bytes) memcpy(blocks + (size_t)rank * bytes, send, bytes);
  struct ring r = {.comm = comm,
                   .type = MPI_BYTE,
                   .next = (rank + 1) % size,
                   .prev = (rank + size - 1) % size,
                   .count = bytes,
                   .elem = 1,
                   .segment = segment_elements(bytes, 1)};
  size_t segments = (bytes + r.segment - 1) / r.segment;
  MPI_Request requests[IN_FLIGHT][2];
  /* At step k this rank passes on block rank-k (its own at step 0) and takes block
   * rank-k-1, which it passes on at the next step. */
  for (int step = 0; step < size - 1; step++) {
    const char *out = blocks + (size_t)((rank - step + size) % size) * bytes;
    char *in = blocks + (size_t)((rank - step - 1 + size) % size) * bytes;
    for (size_t j = 0; j < segments; j++) {
      if (j >= IN_FLIGHT) mpi_wait(requests[j % IN_FLIGHT], 2, "ring all-gather");
      size_t off = j * r.segment;
      pass_on(&r, out + off, in + off, segment_length(&r, j), requests[j % IN_FLIGHT]);
    }
    for (size_t j = segments > IN_FLIGHT ? segments - IN_FLIGHT : 0; j < segments; j++)
      mpi_wait(requests[j % IN_FLIGHT], 2, "ring all-gather");
  }
}
