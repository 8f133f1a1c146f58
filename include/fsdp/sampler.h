/* The next token from a position's logits, for fsdp sample (src/models/sampler.c). */
#ifndef FSDP_SAMPLER_H
#define FSDP_SAMPLER_H

#include <stdint.h>

struct sampler {
  float temperature; /* 0: greedy */
  int top_k;         /* 0: every token */
  uint64_t seed;
  uint64_t draws;    /* draws made so far: the next one's counter */
  int vocab_size;
  struct ranked *ranked; /* vocab_size entries of scratch for top-k */
};

void sampler_init(struct sampler *s, int vocab_size, float temperature, int top_k, uint64_t seed);
void sampler_free(struct sampler *s);
/* Temperature 0: the largest logit, ties to the lowest id (torch.argmax's). Else a draw
 * from softmax(logits / temperature) over the top_k largest logits (ties to the lower
 * ids), with draw i's uniform from Philox at (seed, i): the same seed, the same tokens. */
int sampler_next(struct sampler *s, const float *logits);

#endif
