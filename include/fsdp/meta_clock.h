/* The meta device's clock: `fsdp plan`'s step-time model (docs/architecture.md, "Step
 * time"). A meta device runs nothing, but its streams keep time: the layers above charge
 * each launch what it would take on the device the meta device plans for (src/nn: an
 * op's FLOPs and bytes at the rates below; src/comm: a collective's ring over the group's
 * links), the charge runs on the stream's clock in stream order, an event carries the
 * time of its point, and a wait moves the waiter's clock. So a step planned on meta is
 * the runtime's own schedule — its prefetches, reshards and waits, decided by the same
 * code — timed. One host thread plans: the host's clock is the process's.
 *
 * A stream that runs on the calling thread (the host stream of a meta device planning for
 * the cpu) moves the host's clock by all it runs and waits for; any other stream runs
 * beside the host, which pays launch_s for each launch and waits only when it
 * synchronizes. */
#ifndef FSDP_META_CLOCK_H
#define FSDP_META_CLOCK_H

#include "fsdp/device.h"

/* What the planned device achieves (peaks times efficiencies); 0 for a rate charges
 * nothing for that part, as on a meta device no one gave a speed. */
struct device_speed {
  double matmul_flops;    /* FLOP/s of the matrix products */
  double attention_flops; /* FLOP/s of the attention's products */
  double memory_bytes;    /* bytes/s that an op streaming its operands reaches */
  double host_link_bytes; /* bytes/s of a copy between host and device memory */
  double launch_s;        /* the host's time to put one piece of work on a stream that runs beside it */
  double op_s;            /* the least time one op takes on the device */
};

/* The speed of every meta device planning for target (cpu or cuda), from now on. */
void meta_clock_set_speed(enum device_kind target, const struct device_speed *speed);
/* The speed of the device a meta device plans for; all zeros on a device that computes. */
const struct device_speed *meta_clock_speed(const struct device *d);

/* Charges `seconds` of work named `what` to s, after all work launched on it before: on
 * a meta device only (elsewhere the work takes what it takes). The layers that launch
 * work call it; what they call it names the work in meta_clock_read's tallies. */
void stream_spend(struct stream *s, const char *what, double seconds);

enum { META_CLOCK_TALLIES = 96, META_CLOCK_NAME_MAX = 48 };

/* Seconds of one stream (its name) on one thing (a kind of work; or what it waited for). */
struct meta_tally {
  char stream[META_CLOCK_NAME_MAX];
  char what[META_CLOCK_NAME_MAX];
  double seconds;
};

/* Since the last reset: the host's clock, what each stream ran, and why each host stream
 * (the compute streams) stood idle — waiting for another stream (named by it: an event
 * recorded there, or a synchronize of it while the host was blocked) or for the host
 * ("host": launches, or the host's own work) — so that, for a host stream, its work and
 * idleness add up to the host's clock: the step's critical path. The host's own waits in
 * stream_synchronize and event_synchronize are tallied under stream "host". */
struct meta_clock_reading {
  double host_s;
  int n_busy, n_idle;
  struct meta_tally busy[META_CLOCK_TALLIES];
  struct meta_tally idle[META_CLOCK_TALLIES];
};
/* The host's clock in seconds: it only ever moves on. */
double meta_clock_now(void);
/* reset: the tallies and host_s count again from this reading. */
void meta_clock_read(struct meta_clock_reading *out, int reset);
/* The seconds of the tallies of `stream` (NULL: any) on `what` (NULL: anything). */
double meta_tally_sum(const struct meta_tally *t, int n, const char *stream, const char *what);

#endif
