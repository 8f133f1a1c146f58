/* The ranks of a command that runs on many: MPI started, and every rank's command line
 * the same as rank 0's. mpirun's A : B form can start ranks with other flags, and ranks
 * that disagree on the model or the batches call collectives of other sizes (the heap
 * corrupted), or train apart silently (another --lr or --seed on one rank). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"

/* The first argument of mine that is not rank 0's, its index; the whole lines agree: -1. */
static int first_difference(int argc, char **argv, const char *line, size_t bytes, const char **theirs) {
  size_t at = 0;
  for (int i = 0;; i++) {
    *theirs = at < bytes ? line + at : NULL;
    if (i == argc || !*theirs) return i == argc && !*theirs ? -1 : i;
    if (strcmp(argv[i], *theirs) != 0) return i;
    at += strlen(*theirs) + 1;
  }
}

void cli_start_ranks(int *argc, char ***argv) {
  comm_init(argc, argv);
  struct comm_group *world = comm_world();
  if (comm_size(world) == 1) return;
  int rank = comm_rank(world);
  uint64_t bytes = 0;
  for (int i = 0; i < *argc; i++) bytes += strlen((*argv)[i]) + 1;
  comm_broadcast(world, &bytes, sizeof bytes, 0);
  char *line = fsdp_xmalloc(bytes);
  for (size_t i = 0, at = 0; rank == 0 && i < (size_t)*argc; i++) {
    size_t n = strlen((*argv)[i]) + 1;
    memcpy(line + at, (*argv)[i], n);
    at += n;
  }
  comm_broadcast(world, line, bytes, 0);
  const char *theirs;
  int i = rank == 0 ? -1 : first_difference(*argc, *argv, line, bytes, &theirs);
  if (i >= 0) {
    /* Where, as the two arguments before it (a flag and its value, most often). */
    char before[256] = "fsdp", mine[256] = "the end", rank0[256] = "the end";
    if (i > 1) snprintf(before, sizeof before, "%s %s", (*argv)[i - 2], (*argv)[i - 1]);
    if (i == 1) snprintf(before, sizeof before, "%s", (*argv)[0]);
    if (i < *argc) snprintf(mine, sizeof mine, "'%s'", (*argv)[i]);
    if (theirs) snprintf(rank0, sizeof rank0, "'%s'", theirs);
    fsdp_fatal("started with another command line than rank 0's: after '%s', %s here, %s there; every rank must run "
               "the same command (one command line for mpirun, not its A : B form)",
               before, mine, rank0);
  }
  free(line);
}
