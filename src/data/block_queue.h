/* Private to src/data: a bounded first-in first-out queue of pointers from one thread to
 * another, for fsdp tokenize's pipeline (a reader thread -> the encoder -> a writer
 * thread). Bounded, so that a fast side waits for a slow one rather than holding a data
 * set in memory. Either side may stop it: the producer when it has no more (perhaps
 * with the failure that stopped it, raised by the consumer on its own thread, so that the
 * job ends from one thread), the consumer when it abandons the work. */
#ifndef FSDP_DATA_BLOCK_QUEUE_H
#define FSDP_DATA_BLOCK_QUEUE_H

struct block_queue;

struct block_queue *block_queue_create(int capacity);
void block_queue_free(struct block_queue *q);
/* Waits while the queue is full; 0 (item not taken) once the consumer abandoned it. */
int block_queue_push(struct block_queue *q, void *item);
/* Waits while it is empty; NULL once the producer finished and every item was taken, or
 * the consumer abandoned it. */
void *block_queue_pop(struct block_queue *q);
/* The producer has no more; failure (copied) says why it stopped early, NULL if it did not. */
void block_queue_finish(struct block_queue *q, const char *failure);
/* What the producer's failure said, or NULL. */
const char *block_queue_failure(struct block_queue *q);
/* The consumer takes no more: pushes and pops return at once. */
void block_queue_abandon(struct block_queue *q);

#endif
