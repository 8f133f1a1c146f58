#include "fsdp/log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_rank;
static int log_world_size = 1;
static int log_to_stderr;

void fsdp_log_info_to_stderr(void) { log_to_stderr = 1; }

void fsdp_log_set_rank(int rank, int world_size) {
  log_rank = rank;
  log_world_size = world_size;
}

int fsdp_log_rank(void) { return log_rank; }
int fsdp_log_world_size(void) { return log_world_size; }

void fsdp_log_info(const char *fmt, ...) {
  if (log_rank != 0) return;
  FILE *out = log_to_stderr ? stderr : stdout;
  va_list args;
  va_start(args, fmt);
  vfprintf(out, fmt, args);
  va_end(args);
  fputc('\n', out);
  fflush(out);
}
