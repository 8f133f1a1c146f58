#include <omp.h>
#include <stdio.h>

#include "attention.h"
#include "fsdp/nn.h"
#include "fsdp/simd.h"
#include "onednn.h"
#include "tile_product.h"

int nn_num_threads(void) { return omp_get_max_threads(); }

void nn_cpu_isa(char *out, size_t size) {
  snprintf(out, size, "%s / oneDNN %s", simd_isa_name(simd_isa()), onednn_isa());
}

int cpu_attention_on_tiles(enum dtype d) { return tile_product_runs() && !(d == DTYPE_BF16 && onednn_amx()); }

const char *cpu_attention_products(enum dtype d) {
  static const char *const TILES[] = {[SIMD_AVX2] = "tile_product avx2", [SIMD_AVX512] = "tile_product avx512",
                                      [SIMD_AVX512_BF16] = "tile_product avx512_bf16"};
  if (d == DTYPE_F32) return "oneDNN sgemm";
  if (!cpu_attention_on_tiles(d)) return d == DTYPE_BF16 && onednn_amx() ? "oneDNN matmul on AMX" : "oneDNN matmul";
  enum simd_isa isa = simd_isa();
  return TILES[d == DTYPE_F16 && isa == SIMD_AVX512_BF16 ? SIMD_AVX512 : isa];
}

void nn_cpu_engines(enum dtype d, char *out, size_t size) {
  snprintf(out, size, "products %s on oneDNN%s, attention's on %s", dtype_name(d),
           onednn_native(d) ? (d == DTYPE_BF16 && onednn_amx() ? " (AMX)" : "") : " over fp32 copies",
           cpu_attention_products(d));
}
