/* A reader run under a catch point (fsdp/error.h): a refusal comes back here, what the
 * reader abandoned is reclaimed, and its message is held to the rule for bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fuzz.h"

_Noreturn void fuzz_finding(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("fuzz finding: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  abort();
}

static void check_message(const char *message) {
  if (strncmp(message, "internal", 8) == 0)
    fuzz_finding("an input broke an internal check instead of being refused: fsdp: error: %s", message);
  if (!strstr(message, fuzz_dir())) fuzz_finding("a refusal that names no file: fsdp: error: %s", message);
  const char *verbose = getenv("FUZZ_VERBOSE");
  if (verbose && strcmp(verbose, "1") == 0) fprintf(stderr, "fsdp: error: %s\n", message);
}

int fuzz_read(void (*read)(void *context), void *context) {
  struct fsdp_catch refused;
  fuzz_heap_track();
  if (setjmp(refused.jump) == 0) {
    fsdp_catch_set(&refused);
    read(context);
    fsdp_catch_set(NULL);
    fuzz_heap_forget();
    return 0;
  }
  fuzz_heap_reclaim();
  fuzz_close_files();
  check_message(refused.message);
  return 1;
}
