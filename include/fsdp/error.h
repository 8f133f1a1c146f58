/* Fatal errors: one message naming what is wrong, then the whole job goes down. */
#ifndef FSDP_ERROR_H
#define FSDP_ERROR_H

#include <setjmp.h>
#include <stddef.h>

/* Called by fsdp_fatal after the message is printed; the comm layer installs one
 * that aborts every rank so that no peer is left waiting in a collective. */
typedef void (*fsdp_abort_fn)(int exit_code);
void fsdp_set_abort_handler(fsdp_abort_fn fn);

/* Prints "fsdp: error: <message>" (with the rank when there are several) and ends the job. */
_Noreturn void fsdp_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Recovering from a refused input, for a program that embeds fsdp's readers and must go
 * on after one (the fuzz harnesses, tests/fuzz). While a catch point is set on a thread,
 * fsdp_fatal on that thread writes its message there and longjmps to it instead of
 * printing and ending the process; the catch point is cleared as it is taken, so it
 * catches one refusal. The failed call is abandoned where it stood, nothing unwound: what
 * it allocated or opened is the catcher's to reclaim, and a call may be caught only if
 * it leaves no state beyond its own half-built result (reading one file, encoding a text,
 * whose helper threads' refusals are raised again on the calling thread; never a step, a
 * collective, or other work on another thread, whose fsdp_fatal still ends the process).
 *
 *   struct fsdp_catch refused;
 *   if (setjmp(refused.jump) == 0) {
 *     fsdp_catch_set(&refused);
 *     read_the_file(...);
 *     fsdp_catch_set(NULL);
 *   } else {
 *     use refused.message;
 *   }
 */
struct fsdp_catch {
  jmp_buf jump;
  char message[2048]; /* what fsdp_fatal would have printed after "fsdp: error: " */
};
/* Sets this thread's catch point, whose jump the caller's frame has set with setjmp and
 * outlives; NULL clears it. Returns the catch point it replaces, for a caller that
 * catches inside another's and sets that one back. */
struct fsdp_catch *fsdp_catch_set(struct fsdp_catch *c);

/* fsdp_fatal with the failing expression and location, for broken invariants. */
#define FSDP_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) fsdp_fatal("internal check failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
  } while (0)

/* malloc/calloc/realloc that end the job with a message instead of returning NULL. */
void *fsdp_xmalloc(size_t bytes);
void *fsdp_xcalloc(size_t count, size_t size);
void *fsdp_xrealloc(void *ptr, size_t bytes);
/* A growing array: buf (holding *cap elements of size bytes) reallocated, when need is
 * more than *cap, to hold at least need of them, *cap doubling from first. */
void *fsdp_xgrow(void *buf, size_t *cap, size_t need, size_t size, size_t first);

#endif
