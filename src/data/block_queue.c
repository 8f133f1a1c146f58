#include "block_queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

struct block_queue {
  pthread_mutex_t lock;
  pthread_cond_t changed; /* an item came or went, or the queue stopped */
  void **items;           /* a ring of capacity */
  int capacity, head, count;
  int finished, abandoned;
  char *failure;
};

struct block_queue *block_queue_create(int capacity) {
  FSDP_CHECK(capacity >= 1);
  struct block_queue *q = fsdp_xcalloc(1, sizeof *q);
  q->items = fsdp_xcalloc((size_t)capacity, sizeof *q->items);
  q->capacity = capacity;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->changed, NULL);
  return q;
}

void block_queue_free(struct block_queue *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->changed);
  free(q->items);
  free(q->failure);
  free(q);
}

int block_queue_push(struct block_queue *q, void *item) {
  pthread_mutex_lock(&q->lock);
  while (!q->abandoned && q->count == q->capacity) pthread_cond_wait(&q->changed, &q->lock);
  int taken = !q->abandoned;
  if (taken) {
    q->items[(q->head + q->count) % q->capacity] = item;
    q->count++;
    pthread_cond_broadcast(&q->changed);
  }
  pthread_mutex_unlock(&q->lock);
  return taken;
}

void *block_queue_pop(struct block_queue *q) {
  pthread_mutex_lock(&q->lock);
  while (!q->abandoned && !q->finished && q->count == 0) pthread_cond_wait(&q->changed, &q->lock);
  void *item = NULL;
  if (!q->abandoned && q->count > 0) {
    item = q->items[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    pthread_cond_broadcast(&q->changed);
  }
  pthread_mutex_unlock(&q->lock);
  return item;
}

void block_queue_finish(struct block_queue *q, const char *failure) {
  /* Copied before the lock: fsdp_xmalloc may end the job, never while holding it. */
  char *copy = failure ? strcpy(fsdp_xmalloc(strlen(failure) + 1), failure) : NULL;
  pthread_mutex_lock(&q->lock);
  q->finished = 1;
  q->failure = copy;
  pthread_cond_broadcast(&q->changed);
  pthread_mutex_unlock(&q->lock);
}

const char *block_queue_failure(struct block_queue *q) {
  pthread_mutex_lock(&q->lock);
  const char *failure = q->failure;
  pthread_mutex_unlock(&q->lock);
  return failure;
}

void block_queue_abandon(struct block_queue *q) {
  pthread_mutex_lock(&q->lock);
  q->abandoned = 1;
  pthread_cond_broadcast(&q->changed);
  pthread_mutex_unlock(&q->lock);
}
