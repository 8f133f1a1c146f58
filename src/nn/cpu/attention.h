/* Private to src/nn/cpu: where the heads of one attention call live (attention.c). */
#ifndef FSDP_NN_CPU_ATTENTION_H
#define FSDP_NN_CPU_ATTENTION_H

#include <stddef.h>

#include "cpu.h"

/* Rows of a query tile and of a key tile: 64 fp32 rows of a 64- or 128-wide head, with
 * the tile's scores, fit a core's L2 cache with room to spare. The CUDA kernel's tiles
 * are as wide, so that the running maximum moves at the same keys. */
enum { ATTENTION_TILE = 64 };

/* GPT-2's packed qkv and Llama's separate q, k, v share the kernels: q, k and v are
 * (B, T, heads, hs) views whose positions are qs and kvs elements apart (3C for all three
 * in a packed qkv); NH query heads share NKV kv heads, query head h using kv head
 * h / (NH / NKV). out is (B, T, NH * hs). */
struct head_layout {
  int B, T, NH, NKV, hs, qs, kvs;
};

/* Where head h of batch b starts in a view whose positions are stride elements apart. */
static inline size_t head_at(const struct head_layout *hl, int stride, int b, int h) {
  return (size_t)b * hl->T * stride + (size_t)h * hl->hs;
}

#endif
