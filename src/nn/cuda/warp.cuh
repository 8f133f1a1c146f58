/* Private to src/nn/cuda: fp32 sums and maxima across a warp and across a block, for the
 * layer kernels' row reductions. The xor butterfly leaves the result in every lane, so
 * that every thread goes on with the same value and no broadcast is needed. A block's
 * threads must be a multiple of 32 and all call these (they contain barriers). */
#ifndef FSDP_NN_CUDA_WARP_CUH
#define FSDP_NN_CUDA_WARP_CUH

static const unsigned LANES = 32, FULL_MASK = 0xffffffffu;

static __device__ inline float warp_sum_f32(float x) {
  for (unsigned offset = LANES / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(FULL_MASK, x, offset);
  return x;
}

/* The sum over the block, in every thread; partial holds a float per warp. The second
 * barrier lets the caller reuse partial at once. Every thread adds the warps' sums in
 * the same order, so all get the same bits. */
static __device__ inline float block_sum_f32(float x, float *partial) {
  unsigned lane = threadIdx.x % LANES, warp = threadIdx.x / LANES, warps = blockDim.x / LANES;
  x = warp_sum_f32(x);
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  float total = 0.0f;
  for (unsigned w = 0; w < warps; w++) total += partial[w];
  __syncthreads();
  return total;
}

#endif
