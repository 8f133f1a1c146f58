/* Private to src/nn/cpu: where the heads of one attention call live (attention.c). */
#ifndef FSDP_NN_CPU_ATTENTION_H
#define FSDP_NN_CPU_ATTENTION_H

#include <stddef.h>

#include "cpu.h"
#include "fsdp/dtype.h"

/* Rows of a query tile, and of a key tile of the two-pass backward's key pass: 64 fp32
 * rows of a 64- or 128-wide head, with the tile's scores, fit a core's L2 cache with room
 * to spare. The CUDA kernel's query and key tiles are as wide. */
enum { ATTENTION_TILE = 64 };

/* Keys a query tile meets in one product on the CPU: each 16-bit product is a call of its
 * own (microseconds of dispatch), so a tile takes its keys in blocks this wide, a
 * block's scores (TILE x KEYS fp32, 64 KiB) still in L2. The running maximum then moves
 * once a block, where the CUDA kernel's moves once a 64-key tile: the same algorithm and
 * rounding points, sums in another order. The key pass's 64-key tiles use the same
 * scratch, rows ATTENTION_KEYS apart. */
enum { ATTENTION_KEYS = 256 };
_Static_assert((int)ATTENTION_KEYS >= (int)ATTENTION_TILE, "a key tile's scores fit a row of a key block's");

/* GPT-2's packed qkv and Llama's separate q, k, v share the kernels: q, k and v are
 * (B, T, heads, hs) views whose positions are qs and kvs elements apart (3C for all three
 * in a packed qkv); NH query heads share NKV kv heads, query head h using kv head
 * h / (NH / NKV). out is (B, T, NH * hs). */
struct head_layout {
  int B, T, NH, NKV, hs, qs, kvs;
};

/* Whether attention's 16-bit products of dtype d run on tile_product (threads.c): from
 * AVX2 up, but where oneDNN runs bf16 on AMX's tile products, a tenth of whose speed
 * vdpbf16ps reaches (the step's products ran at 1230 GFLOP/s on 2 Sapphire Rapids cores,
 * the attention's vdpbf16ps at 190: issue 39); else on oneDNN's matmul. */
int cpu_attention_on_tiles(enum dtype d);
/* What attention's products run on in dtype d, for the run's log: oneDNN's sgemm in
 * fp32; in 16 bits tile_product on the best vector path ("tile_product avx512"), or
 * oneDNN's matmul (on AMX). */
const char *cpu_attention_products(enum dtype d);

/* Where head h of batch b starts in a view whose positions are stride elements apart. */
static inline size_t head_at(const struct head_layout *hl, int stride, int b, int h) {
  return (size_t)b * hl->T * stride + (size_t)h * hl->hs;
}

#endif
