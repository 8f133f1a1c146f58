#define _GNU_SOURCE /* sched_getaffinity */
#include "fsdp/cores.h"

#include <sched.h>

int available_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}
