/* fsdp_fatal ends the process once, with the first error's message and status, however
 * many threads fail at once and whatever fails during the exit itself: the first GPU run
 * (2026-11-26) saw a second error from a helper thread while CUDA unloaded, then a
 * segfault in a library's exit handler. Each case runs in a child process. A catch point
 * (fsdp_catch_set) takes one refusal on its own thread and leaves the exit as it was. */
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child_stderr.h"
#include "fsdp/error.h"

enum { RACERS = 4, ROUNDS = 8 };

static pthread_barrier_t start;

static void *fail_at_once(void *arg) {
  pthread_barrier_wait(&start);
  fsdp_fatal("racer %d failed", (int)(size_t)arg);
}

/* RACERS threads call fsdp_fatal together. */
static void race(const void *arg) {
  (void)arg;
  pthread_barrier_init(&start, NULL, RACERS);
  pthread_t threads[RACERS];
  for (int i = 0; i < RACERS; i++) pthread_create(&threads[i], NULL, fail_at_once, (void *)(size_t)i);
  for (int i = 0; i < RACERS; i++) pthread_join(threads[i], NULL);
}

/* A thread still running when the exit handlers run fails there, as a CUDA helper thread
 * does once the driver is shutting down; the handler gives it time to, and goes on. */
static void fail_from_thread(void) {
  pthread_t t;
  pthread_create(&t, NULL, fail_at_once, (void *)(size_t)RACERS);
  pthread_barrier_wait(&start);
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
}

static void during_exit(const void *arg) {
  (void)arg;
  pthread_barrier_init(&start, NULL, 2);
  atexit(fail_from_thread);
  fsdp_fatal("first failure");
}

/* The exit's own handler fails on the thread that owns the exit. */
static void fail_again(void) { fsdp_fatal("second failure"); }

static void inside_exit(const void *arg) {
  (void)arg;
  atexit(fail_again);
  fsdp_fatal("first failure");
}

/* So does the abort handler (the comm layer's MPI_Abort, say). */
static void failing_abort(int code) { fsdp_fatal("abort handler failed with %d", code); }

static void inside_abort(const void *arg) {
  (void)arg;
  fsdp_set_abort_handler(failing_abort);
  fsdp_fatal("first failure");
}

/* Two refusals caught in turn, with nothing printed, then an uncaught one still ends the
 * process as the first error does. */
static void catch_refusal(const char *message) {
  struct fsdp_catch refused;
  if (setjmp(refused.jump) == 0) {
    fsdp_catch_set(&refused);
    fsdp_fatal("%s", message);
  }
  if (strcmp(refused.message, message) != 0) _exit(3);
}

static void caught_then_fatal(const void *arg) {
  (void)arg;
  catch_refusal("refusal 0");
  catch_refusal("refusal 1");
  fsdp_fatal("after the refusals");
}

/* A catch point is taken once: a second failure before it is set again is fatal. */
static void caught_once(const void *arg) {
  (void)arg;
  struct fsdp_catch refused;
  if (setjmp(refused.jump) == 0) {
    fsdp_catch_set(&refused);
    fsdp_fatal("caught");
  }
  fsdp_fatal("not caught");
}

/* Another thread's failure is not this thread's to catch: it ends the process. */
static void *fail_alone(void *arg) {
  (void)arg;
  fsdp_fatal("worker failed");
}

static void caught_elsewhere(const void *arg) {
  (void)arg;
  struct fsdp_catch refused;
  if (setjmp(refused.jump) == 0) {
    fsdp_catch_set(&refused);
    pthread_t t;
    pthread_create(&t, NULL, fail_alone, NULL);
    pthread_join(t, NULL);
  }
  _exit(3);
}

static int count_errors(const char *message) {
  int n = 0;
  for (const char *p = message; (p = strstr(p, "fsdp: error: ")); p++) n++;
  return n;
}

/* One message, the first error's (want: its text, or NULL for any racer's), and status 1. */
static void expect_one_error(void (*fn)(const void *), const char *what, const char *want) {
  char message[4096];
  int status = run_in_child(fn, NULL, message, sizeof message);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status 0x%x, want exit 1", what, status);
  EXPECT(count_errors(message) == 1, "%s: %d error lines, want 1:\n%s", what, count_errors(message), message);
  if (want) EXPECT(strstr(message, want) != NULL, "%s: '%s' not in:\n%s", what, want, message);
  else EXPECT(strstr(message, "racer ") != NULL, "%s: no racer's message in:\n%s", what, message);
}

int main(void) {
  for (int i = 0; i < ROUNDS; i++) expect_one_error(race, "threads failing at once", NULL);
  expect_one_error(during_exit, "a thread failing during the exit", "first failure");
  expect_one_error(inside_exit, "an exit handler failing", "first failure");
  expect_one_error(inside_abort, "the abort handler failing", "first failure");
  expect_one_error(caught_then_fatal, "refusals caught, then an error", "fsdp: error: after the refusals");
  expect_one_error(caught_once, "a catch point taken twice", "fsdp: error: not caught");
  expect_one_error(caught_elsewhere, "another thread failing", "fsdp: error: worker failed");
  return check_summary("fatal_exit_test");
}
