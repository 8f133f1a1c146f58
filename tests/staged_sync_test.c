/* The staged transport (src/comm/staged.c; the program sets FSDP_COMM_TRANSPORT=staged)
 * driven the way the runtime drives it, under mpirun, on a device that synchronizes as
 * CUDA does (tests/fake_cuda_device.h): all-gathers on one comm stream, reduce-scatters
 * on another, each with a group of its own, while the compute thread allocates, frees
 * and launches kernels it has never launched before, which wait for every stream of the
 * device holding its lock, with collectives in flight and the staged buffers growing.
 * A worker that made a device call between taking a collective and releasing its
 * stream would deadlock here (the hang of collectives_cuda_w4 on the H200); the
 * watchdog then ends the job. Every value is checked against what each rank computes.
 *
 *   staged_sync_test              the steps; passes when they finish with the right values
 *   staged_sync_test stalled-peer rank 1 sleeps; rank 0's compute thread waits inside a
 *                                 device call for a stream parked on a collective with
 *                                 rank 1: the watchdog (1 s) must end the job */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda_device.h"
#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"

enum { UNITS = 5, STEPS = 4 };

/* Growing with the unit, so that the staged buffers grow while collectives are in flight. */
static size_t shard_count(int u) { return 700 * (size_t)(u + 1) + 3; }

/* Small integers: exact in fp32, and so are their sums over the ranks. */
static float param(int rank, int u, size_t i, int step) {
  return (float)((rank * 31 + u * 7 + (int)(i % 1000) * 3 + step) % 13) - 6;
}
static float grad(int rank, int u, size_t k, int step) {
  return (float)((rank * 5 + u * 3 + (int)(k % 1000) + step) % 11) - 5;
}

struct model {
  struct device *d;
  struct stream *compute, *all_gather, *reduce_scatter;
  struct comm_group *all_gather_group, *reduce_scatter_group;
  int rank, size, step;
  float *shard[UNITS], *grad_shard[UNITS], *full[UNITS], *activation[UNITS];
  struct event *gathered[UNITS], *grad_ready, *reduced;
};

/* The kernels, each a distinct function (a first launch waits for the device). */
struct kernel_arg {
  const struct model *m;
  int u;
  float *out;
};

static void fill_kernel(void *arg) {
  const struct kernel_arg *k = arg;
  for (size_t i = 0; i < shard_count(k->u); i++) k->out[i] = param(k->m->rank, k->u, i, k->m->step);
}

/* Checks the gathered unit: rank r's part holds r's shard. */
static void check_gathered(const struct model *m, int u, const char *where) {
  size_t count = shard_count(u);
  for (int r = 0; r < m->size; r++)
    for (size_t i = 0; i < count; i++)
      if (m->full[u][(size_t)r * count + i] != param(r, u, i, m->step))
        fsdp_fatal("staged_sync_test: %s of unit %d, step %d: element %zu of rank %d's part is %g, expected %g",
                   where, u, m->step, i, r, m->full[u][(size_t)r * count + i], param(r, u, i, m->step));
}

static void forward_kernel(void *arg) {
  const struct kernel_arg *k = arg;
  check_gathered(k->m, k->u, "forward");
  k->out[0] = k->m->full[k->u][0];
}

static void backward_kernel(void *arg) {
  const struct kernel_arg *k = arg;
  check_gathered(k->m, k->u, "backward");
  for (size_t j = 0; j < (size_t)k->m->size * shard_count(k->u); j++) k->out[j] = grad(k->m->rank, k->u, j, k->m->step);
}

static void launch_kernel(struct model *m, void (*fn)(void *), const char *label, int u, float *out) {
  struct kernel_arg k = {m, u, out};
  stream_launch(m->compute, label, fn, &k, sizeof k);
}

static void gather(struct model *m, int u) {
  if (u < 0 || u >= UNITS || m->full[u]) return;
  size_t count = shard_count(u);
  m->full[u] = device_alloc(m->d, (size_t)m->size * count * sizeof(float), MEM_UNSHARDED_PARAMS, m->all_gather);
  char label[64];
  snprintf(label, sizeof label, "all-gather unit %d", u);
  comm_all_gather_async(m->all_gather_group, m->all_gather, label, m->shard[u], m->full[u], count, COMM_F32);
  event_record(m->gathered[u], m->all_gather);
}

/* Gathers u (and prefetches next), waits for it, and takes an activation whose size
 * changes every step: a new allocation, which waits for the device, gathers in flight. */
static void unshard(struct model *m, int u, int next) {
  gather(m, u);
  gather(m, next);
  stream_wait_event(m->compute, m->gathered[u]);
  size_t bytes = (size_t)(u + 1) * 4096 * (size_t)(m->step + 1);
  if (!m->activation[u]) m->activation[u] = device_alloc(m->d, bytes, MEM_ACTIVATIONS, m->compute);
}

static void reshard(struct model *m, int u) {
  device_free(m->d, m->full[u], m->compute);
  m->full[u] = NULL;
}

static void check_reduced(const struct model *m) {
  for (int u = 0; u < UNITS; u++) {
    size_t count = shard_count(u);
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int r = 0; r < m->size; r++) want += grad(r, u, (size_t)m->rank * count + i, m->step);
      if (m->grad_shard[u][i] != want)
        fsdp_fatal("staged_sync_test: reduce-scatter of unit %d, step %d: element %zu is %g, expected %g", u, m->step,
                   i, m->grad_shard[u][i], want);
    }
  }
}

static void step(struct model *m) {
  for (int u = 0; u < UNITS; u++) launch_kernel(m, fill_kernel, "fill", u, m->shard[u]);
  for (int u = 0; u < UNITS; u++) {
    unshard(m, u, u + 1);
    launch_kernel(m, forward_kernel, "forward", u, m->activation[u]);
    reshard(m, u);
  }
  for (int u = UNITS - 1; u >= 0; u--) {
    unshard(m, u, u - 1);
    size_t count = shard_count(u);
    float *grad_full = device_alloc(m->d, (size_t)m->size * count * sizeof(float), MEM_UNSHARDED_GRADS, m->compute);
    launch_kernel(m, backward_kernel, "backward", u, grad_full);
    event_record(m->grad_ready, m->compute);
    stream_wait_event(m->reduce_scatter, m->grad_ready);
    char label[64];
    snprintf(label, sizeof label, "reduce-scatter unit %d", u);
    comm_reduce_scatter_async(m->reduce_scatter_group, m->reduce_scatter, label, grad_full, m->grad_shard[u], count,
                              COMM_F32, COMM_SUM);
    device_free(m->d, grad_full, m->reduce_scatter);
    reshard(m, u);
    device_free(m->d, m->activation[u], m->compute);
    m->activation[u] = NULL;
  }
  event_record(m->reduced, m->reduce_scatter);
  stream_wait_event(m->compute, m->reduced);
  check_reduced(m);
  device_empty_cache(m->d); /* frees, which wait for the device, at every step's end */
}

static void model_init(struct model *m, struct comm_group *world) {
  memset(m, 0, sizeof *m);
  m->d = fake_cuda_device_open();
  m->rank = comm_rank(world);
  m->size = comm_size(world);
  m->compute = device_host_stream_create(m->d, "compute");
  m->all_gather = device_stream_create(m->d, "all-gather");
  m->reduce_scatter = device_stream_create(m->d, "reduce-scatter");
  m->all_gather_group = comm_group_dup(world, "all-gather");
  m->reduce_scatter_group = comm_group_dup(world, "reduce-scatter");
  for (int u = 0; u < UNITS; u++) {
    m->shard[u] = device_alloc(m->d, shard_count(u) * sizeof(float), MEM_SHARDED_PARAMS, NULL);
    m->grad_shard[u] = device_alloc(m->d, shard_count(u) * sizeof(float), MEM_SHARDED_GRADS, NULL);
    m->gathered[u] = event_create(m->d);
  }
  m->grad_ready = event_create(m->d);
  m->reduced = event_create(m->d);
}

static void model_free(struct model *m) {
  stream_destroy(m->all_gather);
  stream_destroy(m->reduce_scatter);
  stream_destroy(m->compute);
  comm_group_free(m->all_gather_group);
  comm_group_free(m->reduce_scatter_group);
  for (int u = 0; u < UNITS; u++) {
    device_free(m->d, m->shard[u], NULL);
    device_free(m->d, m->grad_shard[u], NULL);
    event_destroy(m->gathered[u]);
  }
  event_destroy(m->grad_ready);
  event_destroy(m->reduced);
  device_close(m->d);
}

/* Rank 0 gathers unit 0 while rank 1 sleeps, then allocates: the allocation waits, inside
 * the device's lock, for the all-gather stream, parked until rank 1 joins. */
static void stall(struct model *m) {
  comm_set_timeout(1.0);
  if (m->rank == 1) sleep(60); /* far past the timeout and the test's limit */
  gather(m, 0);
  device_alloc(m->d, 1 << 20, MEM_ACTIVATIONS, m->compute);
}

int main(int argc, char **argv) {
  setenv("FSDP_COMM_TRANSPORT", "staged", 1);
  comm_init(&argc, &argv);
  const char *mode = argc > 1 ? argv[1] : "";
  struct model m;
  model_init(&m, comm_world());
  if (strcmp(mode, "stalled-peer") == 0) {
    if (m.size < 2) fsdp_fatal("staged_sync_test stalled-peer needs at least 2 ranks");
    stall(&m);
    fsdp_fatal("staged_sync_test: the stalled all-gather finished"); /* the bug under test */
  }
  if (*mode) fsdp_fatal("usage: staged_sync_test [stalled-peer]");
  comm_set_timeout(10.0);
  for (m.step = 0; m.step < STEPS; m.step++) step(&m);
  model_free(&m);
  fsdp_log_info("staged_sync_test: W=%d: %d steps of %d units, all-gathers and reduce-scatters staged under "
                "CUDA's synchronization, all values right",
                m.size, STEPS, UNITS);
  comm_finalize();
  return 0;
}
