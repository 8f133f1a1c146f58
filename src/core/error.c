#include "fsdp/error.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fsdp/log.h"

static fsdp_abort_fn abort_handler;

void fsdp_set_abort_handler(fsdp_abort_fn fn) { abort_handler = fn; }

/* The job ends once, with the first error's message and status. exit() from a second
 * thread while the first runs the process's exit handlers (CUDA's unload among them)
 * is undefined behaviour, and a helper thread whose CUDA calls start failing because
 * the driver is unloading would report a second, misleading error. So the first caller
 * owns the exit; a later caller on another thread waits for the exit to take it; a
 * caller on the owning thread (an exit or abort handler failing in turn) is inside an
 * exit already, and leaves at once. */
static atomic_flag ending = ATOMIC_FLAG_INIT;
static _Thread_local int owns_exit;

/* A caught refusal ends nothing, so it never takes the exit above: the next input finds
 * the single-entry state as the first did. */
static _Thread_local struct fsdp_catch *catcher;

struct fsdp_catch *fsdp_catch_set(struct fsdp_catch *c) {
  struct fsdp_catch *was = catcher;
  catcher = c;
  return was;
}

void fsdp_fatal(const char *fmt, ...) {
  char message[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (owns_exit) _exit(1);
  if (catcher) {
    struct fsdp_catch *c = catcher;
    catcher = NULL;
    snprintf(c->message, sizeof c->message, "%s", message);
    longjmp(c->jump, 1);
  }
  if (atomic_flag_test_and_set(&ending))
    for (;;) pause();
  owns_exit = 1;
  if (fsdp_log_world_size() > 1)
    fprintf(stderr, "fsdp: error: rank %d: %s\n", fsdp_log_rank(), message);
  else
    fprintf(stderr, "fsdp: error: %s\n", message);
  fflush(stderr);
  fflush(stdout);
  if (abort_handler) abort_handler(1);
  exit(1);
}

void *fsdp_xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) fsdp_fatal("out of memory allocating %zu bytes", bytes);
  return p;
}

void *fsdp_xcalloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) fsdp_fatal("out of memory allocating %zu x %zu bytes", count, size);
  return p;
}

void *fsdp_xrealloc(void *ptr, size_t bytes) {
  void *p = realloc(ptr, bytes ? bytes : 1);
  if (!p) fsdp_fatal("out of memory growing a buffer to %zu bytes", bytes);
  return p;
}

void *fsdp_xgrow(void *buf, size_t *cap, size_t need, size_t size, size_t first) {
  if (need <= *cap) return buf;
  size_t grown = *cap ? *cap : first;
  while (grown < need) grown *= 2;
  buf = fsdp_xrealloc(buf, grown * size);
  *cap = grown;
  return buf;
}
