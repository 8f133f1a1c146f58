/* Private to src/cli: the signals that ask `fsdp train` to stop (preemption, a time limit,
 * a user's Ctrl-C): SIGTERM, SIGINT and SIGUSR1. The handler only records the first one;
 * the training loop reads it at the step's metric all-reduce, so that every rank stops
 * after the same step, writes a checkpoint and exits FSDP_EXIT_STOPPED
 * (docs/architecture.md, "Preemption"). A second signal takes its default action at once. */
#ifndef FSDP_CLI_STOP_SIGNAL_H
#define FSDP_CLI_STOP_SIGNAL_H

/* The exit status of a run stopped by a signal once its checkpoint is complete: sysexits'
 * EX_TEMPFAIL ("try again"): `--resume auto` continues it. Stopped without
 * --checkpoint-dir, nothing is saved and the status is 128 + the signal, as a shell
 * reports a process the signal ended. */
enum { FSDP_EXIT_STOPPED = 75 };

/* Installs the handlers (SA_RESTART); the signals are recorded from then on. */
void stop_signal_install(void);
/* The first of the signals received since stop_signal_install, or 0. */
int stop_signal_received(void);
/* "SIGTERM", "SIGINT", "SIGUSR1" (or "another signal"). */
const char *stop_signal_name(int sig);

#endif
