/* The watchdog of comm.h's comm_set_timeout (see watchdog.h). */
#include "watchdog.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/timer.h"

/* NCCL's default: long enough for any collective of a healthy job. Atomic because
 * the comm streams' threads read it while the caller may set it. */
static _Atomic double timeout_s = 600.0;

/* The collective the calling thread is waiting in: each comm stream waits in its own. */
static _Thread_local struct {
  int depth;
  const char *label;
  double deadline_ms;
} watch;

/* Two streams may time out at once; one message is enough. */
static atomic_flag reported = ATOMIC_FLAG_INIT;

void comm_set_timeout(double seconds) {
  if (!(seconds > 0.0)) fsdp_fatal("comm_set_timeout: the timeout must be positive, got %g s", seconds);
  timeout_s = seconds;
}

double comm_timeout(void) { return timeout_s; }

void watch_begin(const char *label) {
  if (watch.depth++ > 0) return;
  watch.label = label;
  watch.deadline_ms = time_now_ms() + 1000.0 * timeout_s;
}

void watch_end(void) { watch.depth--; }

void watch_check(const char *call) {
  if (time_now_ms() <= watch.deadline_ms) return;
  if (atomic_flag_test_and_set(&reported)) {
    /* The other thread's report is taking the job down; this one only waits for it. */
    for (;;) pause();
  }
  /* A wait outside any labelled collective is named by its call alone. */
  int named = strcmp(watch.label, call) != 0;
  fsdp_fatal("%s%s%s%s has not finished after %g s (--comm-timeout): a rank of its group is stopped, dead or cut "
             "off from the network; ending the job",
             watch.label, named ? " (" : "", named ? call : "", named ? ")" : "", (double)timeout_s);
}
