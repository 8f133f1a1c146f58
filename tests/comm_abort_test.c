/* A failure on one rank must end the whole job, not leave its peers waiting in a
 * collective. This program fails on purpose; the test around it (tests/CMakeLists.txt)
 * passes when mpirun exits non-zero within a time limit with the expected message.
 *
 *   comm_abort_test rank-fails       rank 1 calls fsdp_fatal while the others wait in a
 *                                    barrier that rank 1 never reaches
 *   comm_abort_test count-too-large  every rank passes a count above INT_MAX, which must
 *                                    be refused rather than truncated
 *   comm_abort_test bad-root         every rank broadcasts from a root that does not
 *                                    exist: MPI's error must come back as a message
 *   comm_abort_test stalled-peer     rank 1 sleeps instead of joining a barrier: the
 *                                    watchdog (a 1 s timeout) must end the job */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  struct comm_group *world = comm_world();
  const char *mode = argc > 1 ? argv[1] : "";

  if (strcmp(mode, "rank-fails") == 0) {
    if (comm_size(world) < 2) fsdp_fatal("comm_abort_test rank-fails needs at least 2 ranks");
    if (comm_rank(world) == 1) fsdp_fatal("comm_abort_test: deliberate failure");
    comm_barrier(world);
  } else if (strcmp(mode, "count-too-large") == 0) {
    /* Refused before MPI reads the buffer, so one element is enough. */
    float x = 0;
    comm_all_reduce(world, &x, (size_t)INT_MAX + 1, COMM_F32, COMM_SUM);
  } else if (strcmp(mode, "bad-root") == 0) {
    float x = 0;
    comm_broadcast(world, &x, sizeof x, comm_size(world));
  } else if (strcmp(mode, "stalled-peer") == 0) {
    if (comm_size(world) < 2) fsdp_fatal("comm_abort_test stalled-peer needs at least 2 ranks");
    comm_set_timeout(1.0);
    if (comm_rank(world) == 1) sleep(60); /* far past the timeout and the test's limit */
    comm_barrier(world);
  } else {
    fsdp_fatal("usage: comm_abort_test rank-fails|count-too-large|bad-root|stalled-peer");
  }

  /* Reaching this line is the bug under test; exiting 0 makes the wrapper fail. */
  comm_finalize();
  return 0;
}
