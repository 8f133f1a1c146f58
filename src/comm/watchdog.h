/* Private to src/comm: the watchdog behind --comm-timeout. A peer that stopped, died
 * without its launcher noticing, or lost its network would otherwise leave every other
 * rank waiting forever.
 *
 * Every operation that waits for other ranks is registered from its launch until it
 * finishes: a collective launched on a stream (whichever transport carries it), each
 * MPI wait (a blocking collective), and the setup (MPI_Init_thread, MPI_Comm_split,
 * ncclCommInitRank). One monitor thread per process looks at them: one still in
 * flight comm_timeout() seconds after its launch ends the job (fsdp_fatal, whose abort
 * handler MPI_Aborts every rank), naming this rank, the operation's label ("all-gather
 * block 3") and its call ("MPI_Iallgather"). The monitor makes no device or MPI call
 * and waits for no other thread, so no thread escapes it wherever it is blocked: in
 * MPI, inside a CUDA call, in a stream or event synchronize, or a stream parked on the
 * GPU. What a host thread waits for on the device is always some operation's work, and
 * that operation is registered. */
#ifndef FSDP_COMM_WATCHDOG_H
#define FSDP_COMM_WATCHDOG_H

#include <stdint.h>

#include "fsdp/stream.h"

struct watch_op;

/* The monitor thread: started by comm_init before MPI starts, stopped by comm_finalize. */
void watch_start(void);
void watch_stop(void);
/* From any thread, on the way out of a failed job: once this returns the monitor reads
 * nothing more (the exit handlers that follow unload CUDA, and with it the mapped words
 * of NCCL's collectives), without waiting for it: it may be ending the job itself. */
void watch_quiet(void);

/* An operation launched now, in flight until watch_finish; label and call are copied
 * (an unlabelled wait passes its call as its label, and is named by it alone). */
struct watch_op *watch_launch(const char *label, const char *call);
void watch_finish(struct watch_op *op);
/* An operation that a stream finishes: in flight until word reaches value (modulo 2^32),
 * which the monitor sees for itself. */
void watch_launch_on_stream(const char *label, const char *call, const struct stream_word *word, uint32_t value);
/* Before word is destroyed: waits until it has reached the values of the operations
 * launched on it, and drops them. */
void watch_forget(const struct stream_word *word);

#endif
