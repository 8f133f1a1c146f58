/* `fsdp train`: a training run (src/train/train_run.c runs it) over the ranks of mpirun. */
#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/train.h"

int fsdp_train_main(int argc, char **argv) {
  /* Before MPI starts, so that a signal in the setup is not lost: it stops the job after
   * its first step. */
  stop_signal_install();
  cli_start_ranks(&argc, &argv);
  struct command_options o;
  int status = command_options_parse(COMMAND_TRAIN, &o, argc, argv) ? 0 : train_run(&o.run);
  /* Its barrier keeps every rank here until rank 0's metadata is durable: mpirun ends the
   * job's other processes once one exits with a status other than 0. */
  comm_finalize();
  return status;
}
