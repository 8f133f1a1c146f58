/* Process groups and collectives over Open MPI. Every call is checked: a failure
 * ends the whole job with a message naming the rank and the collective. */
#ifndef FSDP_COMM_H
#define FSDP_COMM_H

#include <stddef.h>

enum comm_dtype { COMM_F32, COMM_F64, COMM_I32, COMM_I64 };
enum comm_reduce_op { COMM_SUM, COMM_AVG, COMM_MAX };

struct comm_group; /* opaque: the runtime above never sees MPI */

/* Starts MPI (once per process) and installs an abort handler that takes every
 * rank down when one fails. */
void comm_init(int *argc, char ***argv);
void comm_finalize(void);

/* All ranks of the job, and this process alone (for single-process references). */
struct comm_group *comm_world(void);
struct comm_group *comm_self(void);

int comm_rank(const struct comm_group *g);
int comm_size(const struct comm_group *g);

/* recv[r * count .. (r+1) * count) = send of rank r; send may alias recv + rank * count. */
void comm_all_gather(struct comm_group *g, const void *send, void *recv, size_t count,
                     enum comm_dtype dtype);
/* recv (count elements) = op over ranks of send[rank * count .. (rank+1) * count). */
void comm_reduce_scatter(struct comm_group *g, const void *send, void *recv, size_t count,
                         enum comm_dtype dtype, enum comm_reduce_op op);
/* In place: buf = op over ranks of buf. */
void comm_all_reduce(struct comm_group *g, void *buf, size_t count, enum comm_dtype dtype,
                     enum comm_reduce_op op);
void comm_broadcast(struct comm_group *g, void *buf, size_t bytes, int root);
void comm_barrier(struct comm_group *g);

/* Ends every rank of the job with the given exit code. */
_Noreturn void comm_abort(int exit_code);

size_t comm_dtype_size(enum comm_dtype dtype);

#endif
