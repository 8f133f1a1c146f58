/* Collectives launched on device streams (src/comm/transport.h) against what each rank
 * computes on the host: every rank's contribution is a pure function of (rank, index), so
 * every rank knows what all the others sent. Run under mpirun, on the device named by
 * the argument (cuda when none): on cuda, W = 1 takes NCCL, ranks that share a GPU the
 * staged transport; on cpu, MPI on the stream's thread, or the staged transport with
 * FSDP_COMM_TRANSPORT=staged (which forces either). Exits 77 (ctest: skipped) where no
 * GPU can be used. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/log.h"

enum { SKIP = 77 };

/* 7 and 4097 divide by no world size above 1; 131073 is past the ring's bf16 segment. */
static const size_t COUNTS[] = {0, 1, 7, 4097, 131073};

static struct device *device;
static int checks;

static const char *dtype_label(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return "f32";
    case COMM_F64: return "f64";
    case COMM_I32: return "i32";
    case COMM_BF16: return "bf16";
    default: return "?";
  }
}

/* Integers in [-8, 8]: exact in every dtype, and so are their sums over up to 16 ranks
 * in any order, whatever the transport's algorithm. */
static double contribution(int rank, size_t i) { return (double)((i * 7 + (size_t)rank * 5 + 3) % 17) - 8.0; }

static void store(void *buf, enum comm_dtype dtype, size_t i, double v) {
  switch (dtype) {
    case COMM_F32: ((float *)buf)[i] = (float)v; return;
    case COMM_F64: ((double *)buf)[i] = v; return;
    case COMM_I32: ((int32_t *)buf)[i] = (int32_t)v; return;
    case COMM_BF16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); return;
    default: fsdp_fatal("collectives_cuda_test: dtype %d is not tested", (int)dtype);
  }
}

static double load(const void *buf, enum comm_dtype dtype, size_t i) {
  switch (dtype) {
    case COMM_F32: return ((const float *)buf)[i];
    case COMM_F64: return ((const double *)buf)[i];
    case COMM_I32: return ((const int32_t *)buf)[i];
    case COMM_BF16: return bf16_to_f32(((const uint16_t *)buf)[i]);
    default: fsdp_fatal("collectives_cuda_test: dtype %d is not tested", (int)dtype);
  }
}

/* op over the ranks of the values at index j, rounded once to dtype (an average's
 * quotient is correctly rounded by the MPI path; NCCL's may be a multiply by 1/W, which
 * `expect` allows one rounding for). */
static double reduced(int size, size_t j, enum comm_dtype dtype, enum comm_reduce_op op) {
  double sum = 0, max = -INFINITY;
  for (int r = 0; r < size; r++) {
    sum += contribution(r, j);
    max = fmax(max, contribution(r, j));
  }
  if (op == COMM_MAX) return max;
  if (op == COMM_SUM) return sum;
  double avg = sum / size;
  return dtype == COMM_F32 ? (double)(float)avg : dtype == COMM_BF16 ? bf16_to_f32(f32_to_bf16((float)avg)) : avg;
}

static void expect(const char *what, enum comm_dtype dtype, size_t count, size_t i, double got, double want,
                   int rank, enum comm_reduce_op op) {
  double ulp = dtype == COMM_BF16 ? 1.0 / 128 : dtype == COMM_F32 ? 1.0 / (1 << 23) : 1.0 / (1ull << 52);
  double tolerance = op == COMM_AVG ? fabs(want) * ulp : 0;
  if (fabs(got - want) <= tolerance) return;
  fsdp_fatal("collectives_cuda_test: %s (%s, count %zu) wrong on rank %d: element %zu is %.17g, expected %.17g",
             what, dtype_label(dtype), count, rank, i, got, want);
}

/* A device buffer of n elements, from host values. */
static void *to_device(struct stream *s, const void *host, size_t bytes) {
  void *d = device_alloc(device, bytes, MEM_COMM, s);
  device_copy_to_device(s, d, host, bytes);
  return d;
}

/* The values a rank sends: `total` elements, element j being contribution(rank, j). */
static void *contributions(int rank, size_t total, enum comm_dtype dtype) {
  void *host = fsdp_xmalloc(total * comm_dtype_size(dtype) + 1);
  for (size_t j = 0; j < total; j++) store(host, dtype, j, contribution(rank, j));
  return host;
}

static void *from_device(struct stream *s, const void *d, size_t bytes) {
  void *host = fsdp_xmalloc(bytes + 1);
  device_copy_to_host(s, host, d, bytes);
  stream_synchronize(s);
  return host;
}

static void check_all_gather(struct comm_group *g, struct stream *s, enum comm_dtype dtype, size_t count, int in_place) {
  int rank = comm_rank(g), size = comm_size(g);
  size_t elem = comm_dtype_size(dtype), total = (size_t)size * count;
  void *host = contributions(rank, count, dtype);
  void *recv = device_alloc(device, total * elem, MEM_COMM, s);
  device_memset(s, recv, 0x7f, total * elem); /* no contribution's pattern */
  void *send = (char *)recv + (size_t)rank * count * elem;
  if (in_place)
    device_copy_to_device(s, send, host, count * elem);
  else
    send = to_device(s, host, count * elem);

  comm_all_gather_async(g, s, "all-gather", send, recv, count, dtype);

  void *got = from_device(s, recv, total * elem);
  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < count; i++)
      expect(in_place ? "in-place all-gather" : "all-gather", dtype, count, (size_t)r * count + i,
             load(got, dtype, (size_t)r * count + i), contribution(r, i), rank, COMM_SUM);
  if (!in_place) device_free(device, send, s);
  device_free(device, recv, s);
  free(host), free(got);
  checks++;
}

static void check_reduce_scatter(struct comm_group *g, struct stream *s, enum comm_dtype dtype, size_t count,
                                 enum comm_reduce_op op) {
  int rank = comm_rank(g), size = comm_size(g);
  size_t elem = comm_dtype_size(dtype), total = (size_t)size * count;
  void *host = contributions(rank, total, dtype);
  void *send = to_device(s, host, total * elem);
  void *recv = device_alloc(device, count * elem, MEM_COMM, s);

  comm_reduce_scatter_async(g, s, "reduce-scatter", send, recv, count, dtype, op);

  void *got = from_device(s, recv, count * elem), *sent = from_device(s, send, total * elem);
  for (size_t i = 0; i < count; i++)
    expect("reduce-scatter", dtype, count, i, load(got, dtype, i), reduced(size, (size_t)rank * count + i, dtype, op),
           rank, op);
  if (memcmp(sent, host, total * elem) != 0)
    fsdp_fatal("collectives_cuda_test: reduce-scatter changed its send buffer (rank %d, count %zu)", rank, count);
  device_free(device, send, s);
  device_free(device, recv, s);
  free(host), free(got), free(sent);
  checks++;
}

static void check_all_reduce(struct comm_group *g, struct stream *s, enum comm_dtype dtype, size_t count,
                             enum comm_reduce_op op) {
  int rank = comm_rank(g), size = comm_size(g);
  size_t elem = comm_dtype_size(dtype);
  void *host = contributions(rank, count, dtype);
  void *buf = to_device(s, host, count * elem);

  comm_all_reduce_async(g, s, "all-reduce", buf, count, dtype, op);

  void *got = from_device(s, buf, count * elem);
  for (size_t i = 0; i < count; i++)
    expect("all-reduce", dtype, count, i, load(got, dtype, i), reduced(size, i, dtype, op), rank, op);
  device_free(device, buf, s);
  free(host), free(got);
  checks++;
}

/* Many collectives in flight on two streams at once, each stream with a group of its
 * own (as the runtime's comm streams), growing in size so that the staged transport
 * grows its buffers under work still queued; nothing is synchronised until the end. */
static void check_in_flight(struct comm_group *world) {
  enum { N = 12 };
  struct comm_group *groups[2] = {comm_group_dup(world, "in flight 0"), comm_group_dup(world, "in flight 1")};
  struct stream *streams[2] = {device_stream_create(device, "comm 0"), device_stream_create(device, "comm 1")};
  int rank = comm_rank(world), size = comm_size(world);
  void *send[2][N], *recv[2][N];
  size_t counts[N];
  for (int k = 0; k < N; k++) {
    counts[k] = (size_t)1 << k;
    for (int q = 0; q < 2; q++) {
      float *host = contributions(rank + q, counts[k], COMM_F32);
      send[q][k] = to_device(streams[q], host, counts[k] * sizeof(float));
      recv[q][k] = device_alloc(device, (size_t)size * counts[k] * sizeof(float), MEM_COMM, streams[q]);
      stream_synchronize(streams[q]);
      free(host);
    }
  }
  for (int k = 0; k < N; k++)
    for (int q = 0; q < 2; q++) {
      comm_all_gather_async(groups[q], streams[q], "all-gather in flight", send[q][k], recv[q][k], counts[k], COMM_F32);
      device_free(device, send[q][k], streams[q]);
    }
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < N; k++) {
      float *got = from_device(streams[q], recv[q][k], (size_t)size * counts[k] * sizeof(float));
      for (int r = 0; r < size; r++)
        for (size_t i = 0; i < counts[k]; i++)
          expect("all-gather in flight", COMM_F32, counts[k], (size_t)r * counts[k] + i, got[(size_t)r * counts[k] + i],
                 contribution(r + q, i), rank, COMM_SUM);
      device_free(device, recv[q][k], streams[q]);
      free(got);
      checks++;
    }
  for (int q = 0; q < 2; q++) {
    comm_group_free(groups[q]);
    stream_destroy(streams[q]);
  }
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  int kind = device_kind_parse(argc > 1 ? argv[1] : "cuda");
  if (kind != DEVICE_CPU && kind != DEVICE_CUDA) fsdp_fatal("usage: collectives_cuda_test [cpu|cuda]");
  char why[256];
  if (kind == DEVICE_CUDA && !device_cuda_available(why, sizeof why)) {
    fsdp_log_info("collectives_cuda_test: skipped: %s", why);
    comm_finalize();
    return SKIP;
  }
  device = device_open(kind, kind);
  struct comm_group *group = comm_group_dup(comm_world(), "stream collectives");
  struct stream *s = device_stream_create(device, "comm");

  static const enum comm_dtype gathered[] = {COMM_F32, COMM_F64, COMM_I32, COMM_BF16};
  static const enum comm_dtype reduced_dtypes[] = {COMM_F32, COMM_BF16};
  for (size_t c = 0; c < sizeof COUNTS / sizeof COUNTS[0]; c++) {
    size_t count = COUNTS[c];
    for (size_t d = 0; d < sizeof gathered / sizeof gathered[0]; d++) {
      check_all_gather(group, s, gathered[d], count, 0);
      check_all_gather(group, s, gathered[d], count, 1);
    }
    for (size_t d = 0; d < 2; d++) {
      check_reduce_scatter(group, s, reduced_dtypes[d], count, COMM_SUM);
      check_reduce_scatter(group, s, reduced_dtypes[d], count, COMM_AVG);
    }
    check_reduce_scatter(group, s, COMM_F32, count, COMM_MAX);
    check_all_reduce(group, s, COMM_F32, count, COMM_SUM);
    check_all_reduce(group, s, COMM_F32, count, COMM_AVG);
    check_all_reduce(group, s, COMM_F32, count, COMM_MAX);
    check_all_reduce(group, s, COMM_F64, count, COMM_SUM); /* the grad norm's */
  }
  check_in_flight(comm_world());

  struct comm_traffic traffic;
  comm_take_traffic(group, &traffic);
  if (comm_size(group) > 1 && !(traffic.all_gather > 0 && traffic.reduce_scatter > 0 && traffic.all_reduce > 0))
    fsdp_fatal("collectives_cuda_test: the collectives on streams were not counted (comm_take_traffic)");

  comm_group_free(group);
  stream_destroy(s);
  const char *transport = getenv("FSDP_COMM_TRANSPORT");
  fsdp_log_info("collectives_cuda_test: W=%d (%s): all %d collective calls on %s streams match the host's "
                "(all-gather f32 f64 i32 bf16, in place too; reduce-scatter sum avg f32 bf16, max f32; all-reduce "
                "sum avg max f32, sum f64; many in flight on two streams)",
                comm_size(comm_world()), transport ? transport : "transport chosen", checks, device_name(device));
  device_close(device);
  comm_finalize();
  return 0;
}
