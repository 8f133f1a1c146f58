/* Checks every collective of comm.h against a reference that each rank computes on
 * its own: what a rank contributes is a pure function of (rank, index), so every rank
 * knows what all the others sent. Run under mpirun at several world sizes; any
 * mismatch ends the job with a message naming the collective, dtype, count and rank. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/log.h"

/* 0 is legal in MPI; 7 and 4097 are not divisible by any world size above 1. */
static const size_t counts[] = {0, 1, 7, 1000, 4097};
static const enum comm_dtype dtypes[] = {COMM_F32, COMM_F64, COMM_I32, COMM_I64};

/* A value no contribution takes, so that an element the collective forgot to write
 * cannot pass by accident. */
static const double unwritten = 1e9;

/* One group under test. salt makes each process's values differ in comm_self, where
 * every process is rank 0: a group that leaked into another process would show. */
struct suite {
  struct comm_group *group;
  const char *group_name;
  double salt;
  int checks; /* collective calls verified */
};

static const char *dtype_label(enum comm_dtype dtype) {
  switch (dtype) {
    case COMM_F32: return "f32";
    case COMM_F64: return "f64";
    case COMM_I32: return "i32";
    case COMM_I64: return "i64";
    case COMM_BF16: return "bf16";
    case COMM_F16: return "f16";
  }
  return "?";
}

static int is_integer(enum comm_dtype dtype) { return dtype == COMM_I32 || dtype == COMM_I64; }

/* What `rank` contributes at index i: multiples of 1/4 below 2^15 (times 4 for the
 * integer dtypes), exact in f32, and so are their sums over 4 ranks, whatever order
 * the reduction takes. The leading term puts the largest value on a different rank
 * from one index to the next, and below zero on some, so MAX is really tested. */
static double contribution(const struct suite *s, int rank, size_t i, enum comm_dtype dtype) {
  int leading = (rank * 7 + (int)(i % 13) * 3) % 13 - 6;
  double v = leading * 1000.0 + (double)i * 0.5 + rank * 0.25 + s->salt;
  return is_integer(dtype) ? 4 * v : v;
}

static void store(void *buf, enum comm_dtype dtype, size_t i, double v) {
  switch (dtype) {
    case COMM_F32: ((float *)buf)[i] = (float)v; break;
    case COMM_F64: ((double *)buf)[i] = v; break;
    case COMM_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case COMM_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case COMM_BF16:
    case COMM_F16: fsdp_fatal("collectives_test: the 16-bit dtypes have checks of their own");
  }
}

static double load(const void *buf, enum comm_dtype dtype, size_t i) {
  switch (dtype) {
    case COMM_F32: return ((const float *)buf)[i];
    case COMM_F64: return ((const double *)buf)[i];
    case COMM_I32: return ((const int32_t *)buf)[i];
    case COMM_I64: return (double)((const int64_t *)buf)[i];
    case COMM_BF16:
    case COMM_F16: fsdp_fatal("collectives_test: the 16-bit dtypes have checks of their own");
  }
  return NAN;
}

static void *filled(size_t n, enum comm_dtype dtype, double v) {
  void *buf = fsdp_xmalloc(n * comm_dtype_size(dtype));
  for (size_t i = 0; i < n; i++) store(buf, dtype, i, v);
  return buf;
}

/* op over all ranks of contribution(., i), rounded as the collective rounds it. */
static double reduced(const struct suite *s, size_t i, enum comm_dtype dtype,
                      enum comm_reduce_op op) {
  int size = comm_size(s->group);
  double sum = 0, max = -INFINITY;
  for (int r = 0; r < size; r++) {
    double v = contribution(s, r, i, dtype);
    sum += v;
    if (v > max) max = v; /* not fmax: gcc 12's vectorizer fails on that reduction for aarch64 (an ICE) */
  }
  if (op == COMM_MAX) return max;
  if (op == COMM_SUM) return sum;
  return dtype == COMM_F32 ? (double)((float)sum / (float)size) : sum / size;
}

/* The average may be a multiply by 1/size instead of a division: allow its one rounding. */
static void expect(const struct suite *s, const char *collective, enum comm_dtype dtype,
                   size_t count, size_t i, double got, double want, int one_rounding) {
  double tolerance = one_rounding ? fabs(want) * (dtype == COMM_F32 ? FLT_EPSILON : DBL_EPSILON)
                                  : 0;
  if (fabs(got - want) <= tolerance) return;
  fsdp_fatal("collectives_test: %s on %s (%s, count %zu) wrong on rank %d: element %zu is "
             "%.17g, expected %.17g",
             collective, s->group_name, dtype_label(dtype), count, comm_rank(s->group), i, got,
             want);
}

/* algorithm: "" for the one comm_all_gather picks, or the one set, named in a failure. */
static void check_all_gather(struct suite *s, const char *algorithm, enum comm_dtype dtype, size_t count,
                             int in_place) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t elem = comm_dtype_size(dtype);
  void *recv = filled((size_t)size * count, dtype, unwritten);
  void *own_slice = (char *)recv + (size_t)rank * count * elem;
  void *send = in_place ? own_slice : fsdp_xmalloc(count * elem);
  for (size_t i = 0; i < count; i++) store(send, dtype, i, contribution(s, rank, i, dtype));

  comm_all_gather(s->group, send, recv, count, dtype);

  char name[64];
  snprintf(name, sizeof name, "%s%sall_gather", in_place ? "in-place " : "", algorithm);
  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < count; i++)
      expect(s, name, dtype, count, (size_t)r * count + i,
             load(recv, dtype, (size_t)r * count + i), contribution(s, r, i, dtype), 0);
  if (!in_place) free(send);
  free(recv);
  s->checks++;
}

static void check_reduce_scatter(struct suite *s, enum comm_dtype dtype, size_t count,
                                 enum comm_reduce_op op, const char *name) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t total = (size_t)size * count;
  void *send = fsdp_xmalloc(total * comm_dtype_size(dtype));
  for (size_t j = 0; j < total; j++) store(send, dtype, j, contribution(s, rank, j, dtype));
  void *recv = filled(count, dtype, unwritten);

  comm_reduce_scatter(s->group, send, recv, count, dtype, op);

  for (size_t i = 0; i < count; i++) {
    size_t j = (size_t)rank * count + i;
    expect(s, name, dtype, count, i, load(recv, dtype, i), reduced(s, j, dtype, op),
           op == COMM_AVG);
  }
  free(send);
  free(recv);
  s->checks++;
}

static void check_all_reduce(struct suite *s, enum comm_dtype dtype, size_t count,
                             enum comm_reduce_op op, const char *name) {
  int rank = comm_rank(s->group);
  void *buf = fsdp_xmalloc(count * comm_dtype_size(dtype));
  for (size_t i = 0; i < count; i++) store(buf, dtype, i, contribution(s, rank, i, dtype));

  comm_all_reduce(s->group, buf, count, dtype, op);

  for (size_t i = 0; i < count; i++)
    expect(s, name, dtype, count, i, load(buf, dtype, i), reduced(s, i, dtype, op),
           op == COMM_AVG);
  free(buf);
  s->checks++;
}

/* Integers below 2^20 in magnitude, varying with rank and index: their sums over up to
 * 16 ranks are exact in f32 in any order, even at counts where contribution()'s
 * quarters would not be, so each reduce-scatter algorithm must match to the bit. */
static double integer_contribution(const struct suite *s, int rank, size_t j) {
  return (double)((j * 7919 + (size_t)rank * 104729 + (size_t)s->salt) % 2000003) - 1000001.0;
}

static const char *algorithm_name(enum comm_algorithm a) {
  return a == COMM_ALGORITHM_RING ? "ring" : a == COMM_ALGORITHM_MPI ? "MPI" : "auto";
}

/* One algorithm forced, then back to the default. Also checks that send is left as it was:
 * it is the caller's gradient buffer. */
static void check_reduce_scatter_algorithm(struct suite *s, enum comm_algorithm algorithm,
                                           enum comm_dtype dtype, size_t count, enum comm_reduce_op op) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t total = (size_t)size * count;
  char name[64];
  snprintf(name, sizeof name, "reduce_scatter %s (%s)", op == COMM_SUM ? "SUM" : "AVG", algorithm_name(algorithm));
  void *send = fsdp_xmalloc(total * comm_dtype_size(dtype));
  for (size_t j = 0; j < total; j++) store(send, dtype, j, integer_contribution(s, rank, j));
  void *recv = filled(count, dtype, unwritten);

  comm_set_algorithm(COMM_REDUCE_SCATTER, algorithm);
  comm_reduce_scatter(s->group, send, recv, count, dtype, op);
  comm_set_algorithm(COMM_REDUCE_SCATTER, COMM_ALGORITHM_AUTO);

  for (size_t i = 0; i < count; i++) {
    double sum = 0;
    for (int r = 0; r < size; r++) sum += integer_contribution(s, r, (size_t)rank * count + i);
    double want = op == COMM_SUM ? sum : dtype == COMM_F32 ? (double)((float)sum / (float)size) : sum / size;
    expect(s, name, dtype, count, i, load(recv, dtype, i), want, op == COMM_AVG);
  }
  for (size_t j = 0; j < total; j++)
    expect(s, "send buffer after reduce_scatter", dtype, count, j, load(send, dtype, j),
           integer_contribution(s, rank, j), 0);
  free(send);
  free(recv);
  s->checks++;
}

/* The ring must add in the same order on every call: with sums that round, two calls
 * must still agree to the bit. */
static void check_ring_deterministic(struct suite *s, enum comm_dtype dtype, size_t count) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t total = (size_t)size * count, elem = comm_dtype_size(dtype);
  void *send = fsdp_xmalloc(total * elem);
  for (size_t j = 0; j < total; j++) store(send, dtype, j, contribution(s, rank, j, dtype) / 3.0);
  void *first = filled(count, dtype, unwritten), *second = filled(count, dtype, unwritten);

  comm_set_algorithm(COMM_REDUCE_SCATTER, COMM_ALGORITHM_RING);
  comm_reduce_scatter(s->group, send, first, count, dtype, COMM_SUM);
  comm_reduce_scatter(s->group, send, second, count, dtype, COMM_SUM);
  comm_set_algorithm(COMM_REDUCE_SCATTER, COMM_ALGORITHM_AUTO);

  for (size_t i = 0; i < count; i++)
    if (memcmp((char *)first + i * elem, (char *)second + i * elem, elem) != 0)
      expect(s, "reduce_scatter (ring) called twice", dtype, count, i, load(second, dtype, i),
             load(first, dtype, i), 0);
  free(send);
  free(first);
  free(second);
  s->checks++;
}

/* --- 16-bit floats: moved as bit patterns; bf16 reduce-scatter sums in fp32 --- */

static uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

/* Any 16 bits, NaNs and infinities included: a gather must not touch them. */
static uint16_t pattern16(const struct suite *s, int rank, size_t i) {
  return (uint16_t)mix((uint32_t)i * 0x9e3779b1u ^ (uint32_t)(rank + 1) * 0x85ebca77u ^ (uint32_t)s->salt);
}

static void check_all_gather16(struct suite *s, enum comm_dtype dtype, size_t count, int in_place) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t total = (size_t)size * count;
  uint16_t *recv = fsdp_xmalloc(total * sizeof *recv);
  /* Every element starts as the complement of what it should become. */
  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < count; i++) recv[(size_t)r * count + i] = (uint16_t)~pattern16(s, r, i);
  uint16_t *send = in_place ? recv + (size_t)rank * count : fsdp_xmalloc(count * sizeof *send);
  for (size_t i = 0; i < count; i++) send[i] = pattern16(s, rank, i);

  comm_all_gather(s->group, send, recv, count, dtype);

  for (int r = 0; r < size; r++)
    for (size_t i = 0; i < count; i++) {
      uint16_t got = recv[(size_t)r * count + i], want = pattern16(s, r, i);
      if (got != want)
        fsdp_fatal("collectives_test: %sall_gather on %s (%s, count %zu) wrong on rank %d: element %zu is "
                   "0x%04x, expected 0x%04x",
                   in_place ? "in-place " : "", s->group_name, dtype_label(dtype), count, rank,
                   (size_t)r * count + i, got, want);
    }
  if (!in_place) free(send);
  free(recv);
  s->checks++;
}

/* Integers in [-8, 8]: every partial sum over up to 4 ranks is an integer below 2^8 in
 * magnitude, exact in bf16, so the ring's roundings change nothing. */
static int small_integer(const struct suite *s, int rank, size_t j) {
  return (int)((j * 7 + (size_t)rank * 5 + (size_t)s->salt) % 17) - 8;
}

/* Signs, significands and exponents (2^-6 to 2^6) at random: sums that cancel and round. */
static uint16_t random_bf16(const struct suite *s, int rank, size_t j) {
  uint32_t r = mix((uint32_t)j * 0x9e3779b1u ^ (uint32_t)(rank + 1) * 0xc2b2ae35u ^ (uint32_t)s->salt ^ 0x5bd1e995u);
  uint32_t exponent = 121 + (r >> 8) % 13;
  return (uint16_t)((r & 0x8000u) | (exponent << 7) | (r & 0x7fu));
}

/* What the ring computes for an element owned by rank `owner` from the ranks' values v
 * (ring.h): ((v[owner+1] + v[owner+2]) + ...) + v[owner], each add in fp32 rounded to
 * bf16, the last one's sum divided by W first for COMM_AVG. The same IEEE operations
 * on the same operands in the same order (a single add or divide, nothing for the
 * compiler to contract): the result must match to the bit. */
static uint16_t ring_bf16(const uint16_t *v, int size, int owner, enum comm_reduce_op op) {
  uint16_t partial = v[(owner + 1) % size];
  for (int k = 2; k <= size; k++) {
    float sum = bf16_to_f32(partial) + bf16_to_f32(v[(owner + k) % size]);
    partial = f32_to_bf16(k == size && op == COMM_AVG ? sum / (float)size : sum);
  }
  return partial;
}

/* bf16 reduce-scatter under any algorithm setting (it always takes the ring). Small
 * integers must give the exact sum, and for AVG the correctly rounded quotient: fp32
 * divides the exact sum with one rounding and bf16 rounds that again, which leaves the
 * quotient correctly rounded (24 >= 2 * 8 + 2 bits), as does double's division. Random
 * values must give what the ring's order gives. Also checks that send is left as it was. */
static void check_reduce_scatter_bf16(struct suite *s, enum comm_algorithm algorithm, size_t count,
                                      enum comm_reduce_op op, int random_values) {
  int rank = comm_rank(s->group), size = comm_size(s->group);
  size_t total = (size_t)size * count;
  uint16_t *send = fsdp_xmalloc(total * sizeof *send), *recv = fsdp_xmalloc(count * sizeof *recv);
  uint16_t *sent = fsdp_xmalloc(total * sizeof *sent), v[64];
  FSDP_CHECK(size <= 64);
  for (size_t j = 0; j < total; j++)
    send[j] = random_values ? random_bf16(s, rank, j) : f32_to_bf16((float)small_integer(s, rank, j));
  memcpy(sent, send, total * sizeof *send);
  for (size_t i = 0; i < count; i++) recv[i] = 0x7fc1u; /* a NaN: no sum of finite values */

  comm_set_algorithm(COMM_REDUCE_SCATTER, algorithm);
  comm_reduce_scatter(s->group, send, recv, count, COMM_BF16, op);
  comm_set_algorithm(COMM_REDUCE_SCATTER, COMM_ALGORITHM_AUTO);

  for (size_t i = 0; i < count; i++) {
    size_t j = (size_t)rank * count + i;
    uint16_t want;
    if (random_values) {
      for (int r = 0; r < size; r++) v[r] = random_bf16(s, r, j);
      want = ring_bf16(v, size, rank, op);
    } else {
      int sum = 0;
      for (int r = 0; r < size; r++) sum += small_integer(s, r, j);
      want = f32_to_bf16(op == COMM_SUM ? (float)sum : (float)(sum / (double)size));
    }
    if (recv[i] != want)
      fsdp_fatal("collectives_test: reduce_scatter %s on %s (bf16, %s values, %s, count %zu) wrong on rank %d: "
                 "element %zu is 0x%04x (%.9g), expected 0x%04x (%.9g)",
                 op == COMM_SUM ? "SUM" : "AVG", s->group_name, random_values ? "random" : "small integer",
                 algorithm_name(algorithm), count, rank, i, recv[i], bf16_to_f32(recv[i]), want, bf16_to_f32(want));
  }
  if (memcmp(send, sent, total * sizeof *send) != 0)
    fsdp_fatal("collectives_test: bf16 reduce_scatter on %s changed its send buffer (rank %d, count %zu)",
               s->group_name, rank, count);
  free(send), free(recv), free(sent);
  s->checks++;
}

static void run_suite16(struct suite *s) {
  static const enum comm_dtype halves[] = {COMM_BF16, COMM_F16};
  for (size_t d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      check_all_gather16(s, halves[d], counts[c], 0);
      check_all_gather16(s, halves[d], counts[c], 1);
    }
  /* Past the ring's segments of 128 Ki bf16 elements, and through its window many times. */
  static const size_t rs_counts[] = {0, 1, 7, 4097, 131073, (1 << 20) + 3};
  static const enum comm_algorithm algorithms[] = {COMM_ALGORITHM_AUTO, COMM_ALGORITHM_MPI, COMM_ALGORITHM_RING};
  for (size_t c = 0; c < sizeof rs_counts / sizeof rs_counts[0]; c++)
    for (size_t a = 0; a < 3; a++)
      for (int random_values = 0; random_values < 2; random_values++) {
        check_reduce_scatter_bf16(s, algorithms[a], rs_counts[c], COMM_SUM, random_values);
        check_reduce_scatter_bf16(s, algorithms[a], rs_counts[c], COMM_AVG, random_values);
      }
}

/* From the last rank, so that a root other than 0 is exercised whenever W > 1. */
static void check_broadcast(struct suite *s, enum comm_dtype dtype, size_t count) {
  int rank = comm_rank(s->group), root = comm_size(s->group) - 1;
  void *buf = filled(count, dtype, unwritten);
  if (rank == root)
    for (size_t i = 0; i < count; i++) store(buf, dtype, i, contribution(s, root, i, dtype));

  comm_broadcast(s->group, buf, count * comm_dtype_size(dtype), root);

  for (size_t i = 0; i < count; i++)
    expect(s, "broadcast", dtype, count, i, load(buf, dtype, i),
           contribution(s, root, i, dtype), 0);
  free(buf);
  s->checks++;
}

static void run_suite(struct suite *s) {
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    enum comm_dtype dtype = dtypes[d];
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      size_t count = counts[c];
      check_all_gather(s, "", dtype, count, 0);
      check_all_gather(s, "", dtype, count, 1);
      check_reduce_scatter(s, dtype, count, COMM_SUM, "reduce_scatter SUM");
      check_reduce_scatter(s, dtype, count, COMM_MAX, "reduce_scatter MAX");
      check_all_reduce(s, dtype, count, COMM_SUM, "all_reduce SUM");
      check_all_reduce(s, dtype, count, COMM_MAX, "all_reduce MAX");
      if (!is_integer(dtype)) { /* COMM_AVG is defined for floating point only */
        check_reduce_scatter(s, dtype, count, COMM_AVG, "reduce_scatter AVG");
        check_all_reduce(s, dtype, count, COMM_AVG, "all_reduce AVG");
      }
      check_broadcast(s, dtype, count);
    }
  }
  /* Past the ring's segments (64 Ki f32, 32 Ki f64 elements) by one and by an odd remainder,
   * and through its window of segments in flight many times over. */
  static const size_t rs_counts[] = {0, 1, 7, 4097, 32769, 65537, 1 << 20, (1 << 20) + 3};
  static const enum comm_dtype float_dtypes[] = {COMM_F32, COMM_F64};
  static const enum comm_algorithm algorithms[] = {COMM_ALGORITHM_MPI, COMM_ALGORITHM_RING};
  for (size_t d = 0; d < 2; d++) {
    for (size_t c = 0; c < sizeof rs_counts / sizeof rs_counts[0]; c++)
      for (size_t a = 0; a < 2; a++) {
        check_reduce_scatter_algorithm(s, algorithms[a], float_dtypes[d], rs_counts[c], COMM_SUM);
        check_reduce_scatter_algorithm(s, algorithms[a], float_dtypes[d], rs_counts[c], COMM_AVG);
      }
    check_ring_deterministic(s, float_dtypes[d], 70001);
  }
  /* The ring all-gather, which AUTO takes across machines only: past its segments of
   * 256 KiB and through its window, in every dtype. */
  comm_set_algorithm(COMM_ALL_GATHER, COMM_ALGORITHM_RING);
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t c = 0; c < sizeof rs_counts / sizeof rs_counts[0]; c++) {
      check_all_gather(s, "ring ", dtypes[d], rs_counts[c], 0);
      check_all_gather(s, "ring ", dtypes[d], rs_counts[c], 1);
    }
  comm_set_algorithm(COMM_ALL_GATHER, COMM_ALGORITHM_AUTO);
  run_suite16(s);
  comm_barrier(s->group);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  FSDP_CHECK(comm_dtype_size(COMM_F32) == 4 && comm_dtype_size(COMM_F64) == 8);
  FSDP_CHECK(comm_dtype_size(COMM_I32) == 4 && comm_dtype_size(COMM_I64) == 8);
  FSDP_CHECK(comm_dtype_size(COMM_BF16) == 2 && comm_dtype_size(COMM_F16) == 2);

  struct comm_group *world = comm_world(), *self = comm_self();
  if (comm_size(self) != 1 || comm_rank(self) != 0)
    fsdp_fatal("collectives_test: comm_self is rank %d of %d on world rank %d, expected 0 of 1",
               comm_rank(self), comm_size(self), comm_rank(world));

  struct suite world_suite = {world, "comm_world", 0, 0};
  struct suite self_suite = {self, "comm_self", 16.0 * comm_rank(world), 0};
  run_suite(&world_suite);
  run_suite(&self_suite);

  fsdp_log_info("collectives_test: W=%d: all %d collective calls match the reference on every "
                "rank (world and self; f32 f64 i32 i64; counts 0 1 7 1000 4097; reduce-scatter by MPI "
                "and by ring, f32 f64, counts 0 to 2^20+3; bf16 f16 all-gather, bf16 reduce-scatter)",
                comm_size(world), world_suite.checks + self_suite.checks);
  comm_finalize();
  return 0;
}
