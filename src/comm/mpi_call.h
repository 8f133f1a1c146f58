/* How src/comm calls MPI (private to this layer). Every call is made under one
 * process-wide lock, so that the comm streams' threads and the host thread never
 * call MPI at once (MPI_THREAD_SERIALIZED), and so that what one thread's call
 * writes into our buffers is ordered, for the thread sanitizer too, before what
 * another thread reads after its own call. Collectives are non-blocking and
 * waited for with mpi_wait, which holds the lock only for each MPI_Test. */
#ifndef FSDP_COMM_MPI_CALL_H
#define FSDP_COMM_MPI_CALL_H

#include <mpi.h>
#include <pthread.h>

extern pthread_mutex_t mpi_lock;

/* Ends the job, naming the call, when rc is not MPI_SUCCESS. */
void mpi_check(int rc, const char *call);

#define MPI_CALL(name, call)             \
  do {                                   \
    pthread_mutex_lock(&mpi_lock);       \
    int mpi_call_rc_ = (call);           \
    pthread_mutex_unlock(&mpi_lock);     \
    mpi_check(mpi_call_rc_, name);       \
  } while (0)

/* Waits for n requests without keeping a core busy. */
void mpi_wait(MPI_Request *requests, int n, const char *call);

#endif
