/* The copy's SIGBUS handler (mapped_copy.h), installed once and scoped by a thread-local
 * jump point: a fault inside a copy jumps back to it (sigsetjmp in the copying frame), a
 * fault anywhere else puts back the action the handler replaced and returns, so that the
 * faulting access runs again under it (the default ends the process, as before). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "mapped_copy.h"

/* volatile: else the compiler drops the store before the copy, which it sees overwritten
 * after a memcpy that cannot read it. */
static _Thread_local sigjmp_buf *volatile copying;
static struct sigaction replaced;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_bus_error(int sig) {
  if (copying) siglongjmp(*copying, 1);
  (void)sig;
  sigaction(SIGBUS, &replaced, NULL);
}

static void install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_bus_error;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &replaced);
}

int mapped_copy(void *dst, const void *src, size_t n) {
  pthread_once(&installed, install);
  sigjmp_buf jump;
  if (sigsetjmp(jump, 1)) {
    copying = NULL;
    return -1;
  }
  copying = &jump;
  memcpy(dst, src, n);
  copying = NULL;
  return 0;
}
