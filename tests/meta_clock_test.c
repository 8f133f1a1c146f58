/* The meta device's clock (fsdp/meta_clock.h) and the meta groups' rings (fsdp/comm.h,
 * comm_meta_seconds), on schedules small enough to time by hand: a stream waits for
 * another's event, the host waits for a stream, and the compute stream's work and
 * idleness add up to the host's clock, each wait named by the stream it waited for. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/meta_clock.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

/* compute: 1 s of work; all-gather: waits for it, then 0.5 s; compute: waits for that,
 * then 0.25 s; the host synchronizes. On a device that runs beside the host (cuda) the
 * host pays launch_s a launch and the compute stream starts as soon as it can; on the cpu
 * the compute stream is the host, which waits in stream_wait_event itself. */
static void test_schedule(enum device_kind target) {
  check_context = target == DEVICE_CUDA ? "cuda" : "cpu";
  double launch = target == DEVICE_CUDA ? 1e-3 : 0;
  struct device_speed speed = {0, 0, 0, 0, launch, 0};
  meta_clock_set_speed(target, &speed);
  struct device *d = device_open(DEVICE_META, target);
  struct stream *compute = device_host_stream_create(d, "compute"), *gather = device_stream_create(d, "all-gather");
  struct event *computed = event_create(d), *gathered = event_create(d);
  struct meta_clock_reading r;
  meta_clock_read(&r, 1);
  double start = meta_clock_now();
  stream_spend(compute, "matmul_forward", 1.0);
  event_record(computed, compute);
  stream_wait_event(gather, computed);
  stream_spend(gather, "all-gather", 0.5);
  event_record(gathered, gather);
  stream_wait_event(compute, gathered);
  stream_spend(compute, "matmul_backward", 0.25);
  stream_synchronize(compute);
  EXPECT(near(meta_clock_now() - start, 1.75), "the host at %.9f s", meta_clock_now() - start);
  meta_clock_read(&r, 0);
  EXPECT(near(r.host_s, 1.75), "host_s %.9f", r.host_s);
  double busy = meta_tally_sum(r.busy, r.n_busy, "compute", NULL);
  double waited = meta_tally_sum(r.idle, r.n_idle, "compute", "all-gather");
  double late = meta_tally_sum(r.idle, r.n_idle, "compute", "host");
  EXPECT(near(busy, 1.25), "compute busy %.9f", busy);
  EXPECT(near(meta_tally_sum(r.busy, r.n_busy, "all-gather", "all-gather"), 0.5), "all-gather busy");
  /* The all-gather starts after its launch, at 1 s or at the host's 2 launches if later. */
  EXPECT(near(waited, 0.5), "waited for the all-gather %.9f", waited);
  EXPECT(near(busy + waited + late, r.host_s), "%.9f + %.9f + %.9f is not the host's %.9f", busy, waited, late,
         r.host_s);
  struct stream_times times;
  stream_get_times(compute, &times);
  EXPECT(near(times.busy_ms, 1250), "stream_times busy %.6f ms", times.busy_ms);
  EXPECT(near(times.blocked_ms, 500), "stream_times blocked %.6f ms", times.blocked_ms);
  /* A reset starts the tallies again; the events keep their times. */
  meta_clock_read(&r, 1);
  meta_clock_read(&r, 0);
  CHECK(r.n_busy == 0 && near(r.host_s, 0));
  stream_wait_event(compute, gathered); /* long reached: no wait */
  meta_clock_read(&r, 0);
  CHECK(meta_tally_sum(r.idle, r.n_idle, NULL, NULL) == 0);
  event_destroy(computed);
  event_destroy(gathered);
  stream_destroy(gather);
  stream_destroy(compute);
  device_close(d);
  struct device_speed none = {0};
  meta_clock_set_speed(target, &none);
  check_context = NULL;
}

/* An op's time is what its device charges; a device that computes charges nothing. */
static void test_rates_and_real_devices(void) {
  struct device_speed speed = {0, 0, 1e9, 5e8, 0, 1e-6};
  meta_clock_set_speed(DEVICE_CPU, &speed);
  struct device *d = device_open(DEVICE_META, DEVICE_CPU);
  CHECK(meta_clock_speed(d)->memory_bytes == 1e9);
  CHECK(meta_clock_speed(device_cpu())->memory_bytes == 0);
  struct stream *s = device_host_stream_create(d, "compute");
  double start = meta_clock_now();
  device_memset(s, (void *)(uintptr_t)4096, 0, 1000000); /* 1 MB at 1 GB/s, after 1 us */
  EXPECT(near(meta_clock_now() - start, 1e-3 + 1e-6), "memset took %.9f s", meta_clock_now() - start);
  stream_destroy(s);
  device_close(d);
  struct stream *real = device_host_stream_create(device_cpu(), "real");
  start = meta_clock_now();
  stream_spend(real, "nothing", 5.0);
  CHECK(meta_clock_now() == start);
  stream_destroy(real);
  struct device_speed none = {0};
  meta_clock_set_speed(DEVICE_CPU, &none);
}

/* A ring step: a rank's part over the hop, or the hop's latency where that is longer. */
static double ring_step(double transfer, double latency) { return transfer > latency ? transfer : latency; }

/* A ring of G ranks takes G - 1 steps, each a rank's part over the slowest hop or its
 * latency; across machines each rank on a machine brings its own NIC, up to intra. */
static void test_rings(void) {
  struct device *d = device_open(DEVICE_META, DEVICE_CUDA);
  struct comm_group *world = comm_meta_group(d, 32, 0);
  struct comm_links links = {8, 0, {100e9, 1e-6}, {10e9, 5e-6}};
  comm_meta_set_links(world, &links);
  double part = 1e6;
  struct comm_mesh one_node;
  comm_mesh_init(&one_node, world, 4, 8);
  /* A shard group within a machine: intra. */
  EXPECT(near(comm_meta_seconds(one_node.shard, COMM_ALL_GATHER, part), 7 * ring_step(part / 100e9, 1e-6)), "within");
  /* The replicate groups: one rank a machine, each hop over its own NIC. */
  EXPECT(near(comm_meta_seconds(one_node.replicate, COMM_REDUCE_SCATTER, part), 3 * ring_step(part / 10e9, 5e-6)),
         "across, one a machine");
  /* A small part waits on the latency alone: its transfer overlaps the wait. */
  EXPECT(near(comm_meta_seconds(one_node.replicate, COMM_REDUCE_SCATTER, 1e3), 3 * 5e-6), "latency-bound");
  /* The world: 8 ranks a machine, 8 NICs, 80 GB/s under intra's 100. */
  EXPECT(near(comm_meta_seconds(world, COMM_ALL_GATHER, part), 31 * ring_step(part / 80e9, 5e-6)),
         "across, 8 a machine");
  /* An all-reduce of B: twice the steps, each B / G. */
  EXPECT(near(comm_meta_seconds(world, COMM_ALL_REDUCE, 32 * part), 62 * ring_step(part / 80e9, 5e-6)), "all-reduce");
  /* One NIC a machine: the 8 replicate groups of a machine share it; the world's ring
   * crosses each machine through it. */
  links.nics_per_node = 1;
  struct comm_group *one_nic = comm_meta_group(d, 32, 0);
  comm_meta_set_links(one_nic, &links);
  struct comm_mesh shared;
  comm_mesh_init(&shared, one_nic, 4, 8);
  EXPECT(near(comm_meta_seconds(shared.replicate, COMM_ALL_GATHER, part), 3 * ring_step(part / (10e9 / 8), 5e-6)),
         "8 replicate groups over one NIC");
  EXPECT(near(comm_meta_seconds(one_nic, COMM_ALL_GATHER, part), 31 * ring_step(part / 10e9, 5e-6)),
         "one NIC a machine");
  comm_mesh_free(&shared);
  comm_group_free(one_nic);
  struct comm_group *dup = comm_group_dup(one_node.replicate, "dup");
  CHECK(comm_meta_seconds(dup, COMM_ALL_GATHER, part) == comm_meta_seconds(one_node.replicate, COMM_ALL_GATHER, part));
  struct comm_group *bare = comm_meta_group(d, 4, 0), *one = comm_meta_group(d, 1, 0);
  CHECK(comm_meta_seconds(bare, COMM_ALL_GATHER, part) == 0); /* no links: nothing charged */
  comm_meta_set_links(one, &links);
  CHECK(comm_meta_seconds(one, COMM_ALL_REDUCE, part) == 0);
  comm_group_free(dup);
  comm_group_free(bare);
  comm_group_free(one);
  comm_mesh_free(&one_node);
  comm_group_free(world);
  device_close(d);
}

int main(void) {
  test_schedule(DEVICE_CUDA);
  test_schedule(DEVICE_CPU);
  test_rates_and_real_devices();
  test_rings();
  return check_summary("meta_clock_test");
}
