/* Bandwidth of the collectives of comm.h as the runtime calls them (f32; reduce-scatter
 * and all-reduce average), in the manner of nccl-tests, beside the single-thread
 * memcpy bandwidth of rank 0. Launch with mpirun; bench/collectives.sh runs it.
 *
 * usage: comm_bench [--min-bytes N] [--max-bytes N]   (defaults 1 KiB and 256 MiB; sizes double)
 *
 * size is nccl-tests' total buffer: all-gather's output, reduce-scatter's input,
 * all-reduce's buffer. time is the mean of several iterations after warm-up, the
 * largest over the ranks; algbw = size / time; busbw = algbw * (W-1)/W for
 * all-gather and reduce-scatter, algbw * 2(W-1)/W for all-reduce: the bytes each
 * rank must move over time, comparable across W and with the memcpy column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/timer.h"

enum collective {
  ALL_GATHER_MPI,
  ALL_GATHER_RING,
  REDUCE_SCATTER_MPI,
  REDUCE_SCATTER_RING,
  ALL_REDUCE,
  NUM_COLLECTIVES
};

struct buffers {
  float *big;   /* size bytes: all-gather output, reduce-scatter input, all-reduce buffer */
  float *small; /* size / W bytes: all-gather input, reduce-scatter output */
  float *copy;  /* rank 0's memcpy destination */
};

/* Enough iterations that the small sizes are not all latency noise, few enough that
 * 256 MiB at W=4 on two cores stays within seconds. */
static int iterations(size_t bytes) {
  size_t n = ((size_t)256 << 20) / bytes;
  return n < 10 ? 10 : n > 500 ? 500 : (int)n;
}

static void run_once(struct comm_group *g, enum collective c, struct buffers *b, size_t count) {
  switch (c) {
    case ALL_GATHER_MPI:
    case ALL_GATHER_RING: comm_all_gather(g, b->small, b->big, count, COMM_F32); break;
    case REDUCE_SCATTER_MPI:
    case REDUCE_SCATTER_RING: comm_reduce_scatter(g, b->big, b->small, count, COMM_F32, COMM_AVG); break;
    case ALL_REDUCE: comm_all_reduce(g, b->big, count, COMM_F32, COMM_AVG); break;
    case NUM_COLLECTIVES: break;
  }
}

/* Mean seconds per call, the largest over the ranks. count is per rank for all-gather
 * and reduce-scatter, the whole buffer for all-reduce. */
static double time_collective(struct comm_group *g, enum collective c, struct buffers *b, size_t count, int iters) {
  if (c == ALL_GATHER_MPI || c == ALL_GATHER_RING)
    comm_set_algorithm(COMM_ALL_GATHER, c == ALL_GATHER_RING ? COMM_ALGORITHM_RING : COMM_ALGORITHM_MPI);
  if (c == REDUCE_SCATTER_MPI || c == REDUCE_SCATTER_RING)
    comm_set_algorithm(COMM_REDUCE_SCATTER, c == REDUCE_SCATTER_RING ? COMM_ALGORITHM_RING : COMM_ALGORITHM_MPI);
  for (int i = 0; i < 1 + iters / 10; i++) run_once(g, c, b, count);
  comm_barrier(g);
  double start = time_now_ms();
  for (int i = 0; i < iters; i++) run_once(g, c, b, count);
  double seconds = (time_now_ms() - start) * 1e-3 / iters;
  comm_all_reduce(g, &seconds, 1, COMM_F64, COMM_MAX);
  return seconds;
}

/* Rank 0 alone: the other ranks wait for it in the first collective that follows. */
static double time_memcpy(struct buffers *b, size_t bytes, int iters) {
  for (int i = 0; i < 1 + iters / 10; i++) memcpy(b->copy, b->big, bytes);
  double start = time_now_ms();
  for (int i = 0; i < iters; i++) memcpy(b->copy, b->big, bytes);
  return (time_now_ms() - start) * 1e-3 / iters;
}

static size_t parse_bytes(const char *flag, const char *text) {
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end || v == 0) fsdp_fatal("comm_bench: %s wants a positive number of bytes, got '%s'", flag, text);
  return (size_t)v;
}

static void print_header(int w) {
  printf("# comm_bench: W=%d, f32; reduce-scatter and all-reduce with COMM_AVG, as the runtime calls them\n", w);
  printf("# time: mean over the iterations after warm-up, max over ranks (us); algbw = size/time (GB/s);\n");
  printf("# busbw = algbw*(W-1)/W (all-gather, reduce-scatter), algbw*2(W-1)/W (all-reduce);\n");
  printf("# memcpy: rank 0, one thread, size bytes copied while the other ranks wait (GB/s)\n");
  printf("%10s %5s |%29s |%29s |%29s |%29s |%29s | %7s | %s\n", "", "", "all_gather MPI", "all_gather ring",
         "reduce_scatter MPI", "reduce_scatter ring", "all_reduce", "memcpy", "RS ring/MPI");
  printf("%10s %5s |", "size (B)", "iters");
  for (int c = 0; c < NUM_COLLECTIVES; c++) printf(" %10s %8s %8s |", "time (us)", "algbw", "busbw");
  printf(" %7s | %5s %s\n", "GB/s", "ratio", "faster");
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  size_t min_bytes = 1 << 10, max_bytes = (size_t)256 << 20;
  for (int i = 1; i < argc; i += 2) {
    const char *value = i + 1 < argc ? argv[i + 1] : "";
    if (strcmp(argv[i], "--min-bytes") == 0) {
      min_bytes = parse_bytes(argv[i], value);
    } else if (strcmp(argv[i], "--max-bytes") == 0) {
      max_bytes = parse_bytes(argv[i], value);
    } else {
      fsdp_fatal("comm_bench: unknown argument '%s' (usage: comm_bench [--min-bytes N] [--max-bytes N])", argv[i]);
    }
  }
  struct comm_group *g = comm_world();
  int rank = comm_rank(g), w = comm_size(g);
  size_t elems = max_bytes / sizeof(float);
  struct buffers b = {fsdp_xmalloc(elems * sizeof(float)), fsdp_xmalloc(elems / (size_t)w * sizeof(float)),
                      rank == 0 ? fsdp_xmalloc(elems * sizeof(float)) : NULL};
  /* Touched before timing so that no page fault is counted; 1.0 stays 1.0 when averaged. */
  for (size_t i = 0; i < elems; i++) b.big[i] = 1.0f;
  for (size_t i = 0; i < elems / (size_t)w; i++) b.small[i] = 1.0f;
  if (rank == 0) memset(b.copy, 0, elems * sizeof(float));

  if (rank == 0) print_header(w);
  for (size_t target = min_bytes; target <= max_bytes; target *= 2) {
    size_t count = target / sizeof(float) / (size_t)w; /* per rank; sizes round down to a multiple of W */
    if (count == 0) continue;
    size_t bytes = count * (size_t)w * sizeof(float);
    int iters = iterations(bytes);
    double memcpy_s = rank == 0 ? time_memcpy(&b, bytes, iters) : 0;
    double t[NUM_COLLECTIVES];
    for (int c = 0; c < NUM_COLLECTIVES; c++)
      t[c] = time_collective(g, (enum collective)c, &b, c == ALL_REDUCE ? count * (size_t)w : count, iters);
    if (rank != 0) continue;
    printf("%10zu %5d |", bytes, iters);
    for (int c = 0; c < NUM_COLLECTIVES; c++) {
      double algbw = (double)bytes / t[c] * 1e-9;
      double bus = c == ALL_REDUCE ? 2.0 * (w - 1) / w : (double)(w - 1) / w;
      printf(" %10.1f %8.2f %8.2f |", t[c] * 1e6, algbw, algbw * bus);
    }
    double ratio = t[REDUCE_SCATTER_RING] / t[REDUCE_SCATTER_MPI];
    printf(" %7.2f | %5.2f %s\n", (double)bytes / memcpy_s * 1e-9, ratio, ratio < 1 ? "ring" : "MPI");
    fflush(stdout);
  }
  free(b.big);
  free(b.small);
  free(b.copy);
  comm_finalize();
  return 0;
}
