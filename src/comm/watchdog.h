/* Private to src/comm: the watchdog behind --comm-timeout. A collective that has not
 * finished in time ends the whole job, naming this rank, the collective's label (the
 * unit it serves, "all-gather block 3") and the MPI call: a peer that stopped, died
 * without its launcher noticing, or lost its network would otherwise leave every
 * other rank waiting forever. Every wait of src/comm goes through mpi_wait, which
 * checks the deadline at each poll, so no extra thread is needed. */
#ifndef FSDP_COMM_WATCHDOG_H
#define FSDP_COMM_WATCHDOG_H

/* Starts the calling thread's deadline, comm_timeout() seconds from now, for the
 * collective named label; a nested call (mpi_wait inside a collective) keeps the
 * outer collective's label and deadline. label must outlive watch_end. */
void watch_begin(const char *label);
void watch_end(void);
/* Ends the job when the calling thread's deadline has passed; call is the MPI call
 * being waited for. */
void watch_check(const char *call);

#endif
