/* The stop signals of `fsdp train` (train.h). A handler may only touch lock-free
 * atomics and call async-signal-safe functions: it records the first signal and does no
 * work; the training loop does the rest between steps. */
#include "fsdp/train.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "fsdp/error.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler may only store lock-free atomics");

static atomic_int received;

static const int STOP_SIGNALS[] = {SIGTERM, SIGINT, SIGUSR1};

/* The first signal is recorded. A second one (Ctrl-C twice, scancel twice) ends the
 * process at once by its default action, whatever is being done: a checkpoint then being
 * written is left without its metadata, never loaded and removed at the next start, and
 * the newest complete one stays (checkpoints are written to temporary names, fsynced,
 * renamed, the metadata last). sigaction and raise are async-signal-safe; the signal is
 * blocked in its handler, so it arrives, with its default action, as the handler returns. */
static void on_signal(int sig) {
  int saved_errno = errno;
  int none = 0;
  if (!atomic_compare_exchange_strong(&received, &none, sig)) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
  }
  errno = saved_errno;
}

void stop_signal_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART; /* the other threads' reads and writes go on */
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof STOP_SIGNALS / sizeof *STOP_SIGNALS; i++)
    if (sigaction(STOP_SIGNALS[i], &sa, NULL) != 0)
      fsdp_fatal("cannot install the handler of %s: %s", stop_signal_name(STOP_SIGNALS[i]), strerror(errno));
}

int stop_signal_received(void) { return atomic_load(&received); }

const char *stop_signal_name(int sig) {
  switch (sig) {
  case SIGTERM: return "SIGTERM";
  case SIGINT: return "SIGINT";
  case SIGUSR1: return "SIGUSR1";
  default: return "another signal";
  }
}
