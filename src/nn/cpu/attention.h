/* Private to src/nn/cpu: what attention's fp32 heads (attention.c) and 16-bit heads
 * (attention16.c) share. */
#ifndef FSDP_NN_CPU_ATTENTION_H
#define FSDP_NN_CPU_ATTENTION_H

#include <stddef.h>

#include "cpu.h"

/* Where the heads of one call live, so that GPT-2's packed qkv and Llama's separate
 * q, k, v share the kernels: q, k and v are (B, T, heads, hs) views whose positions
 * are qs and kvs elements apart (3C for all three in a packed qkv); NH query heads share
 * NKV kv heads, query head h using kv head h / (NH / NKV). out is (B, T, NH * hs). */
struct head_layout {
  int B, T, NH, NKV, hs, qs, kvs;
};

/* Where head h of batch b starts in a view whose positions are stride elements apart. */
static inline size_t head_at(const struct head_layout *hl, int stride, int b, int h) {
  return (size_t)b * hl->T * stride + (size_t)h * hl->hs;
}

/* Each row t of a (T, T) in place: softmax over s <= t of scale times the scores, 0 after. */
void causal_softmax(float *a, int T, float scale);
/* The softmax's Jacobian applied to datt (T, T) in place, with att the softmax:
 * dpreatt = att * (datt - rowsum(att * datt)), 0 where masked. */
void causal_softmax_backward(float *datt, const float *att, int T);

/* 16-bit heads, each on a thread of a parallel region (attention16.c). Head h of batch b:
 * att's (T, T) and out's rows, from q's and kv head g's rows. */
void attention16_head_forward(struct tensor out, struct tensor att, struct tensor q, struct tensor k, struct tensor v,
                              const struct head_layout *hl, int b, int h);
/* kv head g of batch b and the query heads sharing it; an absent gradient has no data;
 * dpre: (T, T) fp32 scratch. */
void attention16_group_backward(struct tensor dq, struct tensor dk, struct tensor dv, struct tensor dout,
                                struct tensor q, struct tensor k, struct tensor v, struct tensor att, float *dpre,
                                const struct head_layout *hl, int b, int g);

#endif
