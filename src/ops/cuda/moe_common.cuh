// Device-side pieces shared by the MoE kernels (moe.cu, moe_fused.cu): the per-token routing of
// one warp and the grouping of one block. Both the separate route/group kernels and the fused
// router kernel call these, so the two paths route and group identically.
#pragma once
#include <cstdint>

#include "ops/cuda/dense_common.cuh"
#include "ops/moe_args.h"

namespace grt::cuda::moe {

constexpr int kMaxPerLane = 16;  // 512 experts / 32 lanes

using dense::dot8;  // the grouped GEMVs' (moe_gemv.cu) order, so kernels that use it give their bits
using dense::warp_sum;

// The same with x already in float32 (two float4 of one chunk): the same bits as dot8.
__device__ __forceinline__ float dot8(const uint4& w, const float4& x0, const float4& x1, float acc) {
  const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&w);
  const float2 p0 = __bfloat1622float2(a[0]), p1 = __bfloat1622float2(a[1]), p2 = __bfloat1622float2(a[2]),
               p3 = __bfloat1622float2(a[3]);
  acc = fmaf(p0.x, x0.x, acc);
  acc = fmaf(p0.y, x0.y, acc);
  acc = fmaf(p1.x, x0.z, acc);
  acc = fmaf(p1.y, x0.w, acc);
  acc = fmaf(p2.x, x1.x, acc);
  acc = fmaf(p2.y, x1.y, acc);
  acc = fmaf(p3.x, x1.z, acc);
  acc = fmaf(p3.y, x1.w, acc);
  return acc;
}

// The softmax numerators of route_row: v[i] = exp(row[e] - max) for expert e = lane + 32 * i
// (-1 past `experts`); returns their sum over the warp (every lane gets it). Every caller gets
// route_row's bits.
template <typename T, int kPerLane>
__device__ __forceinline__ float softmax_numerators(const T* row, int experts, float (&v)[kPerLane]) {
  const int lane = threadIdx.x % 32;
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < experts ? dense::to_float(row[e]) : -INFINITY;
    m = fmaxf(m, v[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    v[i] = lane + 32 * i < experts ? expf(v[i] - m) : -1.0f;  // -1: no expert / taken
    sum += v[i] > 0 ? v[i] : 0.0f;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  return sum;
}

// One warp routes one token: softmax over `experts` logits in float32 (held in registers), the
// top_k largest (ties: the lower expert index), renormalised when asked. `real` false: the token
// routes nowhere (ids -1, weights 0). ids / weights point at the token's top_k entries.
// kPerLane: logits per lane, experts <= 32 * kPerLane. A smaller kPerLane gives the same bits
// (the extra entries only add exact zeros and never win), in fewer instructions.
// Returns lane j's choice j (j < min(top_k, 32)); -1 on other lanes and for rows routed nowhere.
template <typename T, int kPerLane = kMaxPerLane>
__device__ __forceinline__ int route_row(const T* row, bool real, int32_t* ids, float* weights, int experts,
                                         int top_k, bool renormalize) {
  const int lane = threadIdx.x % 32;
  if (!real) {
    for (int j = lane; j < top_k; j += 32) {
      ids[j] = -1;
      weights[j] = 0.0f;
    }
    return -1;
  }
  float v[kPerLane];
  const float sum = softmax_numerators<T, kPerLane>(row, experts, v);
  float picked = 0, my_w = 0;
  int my_id = -1;
  for (int j = 0; j < top_k; ++j) {
    float best = -2.0f;
    int best_e = 0x7fffffff;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (v[i] > best) {  // strict: the lowest index of a lane wins ties
        best = v[i];
        best_e = lane + 32 * i;
      }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (ob > best || (ob == best && oe < best_e)) {
        best = ob;
        best_e = oe;
      }
    }
    const float p = best / sum;
    picked += p;
    if (lane == j % 32 && j < 32) {
      my_w = p;
      my_id = best_e;
    }
    if (j >= 32 && lane == 0) {  // more than 32 choices: written directly
      ids[j] = best_e;
      weights[j] = p;
    }
    if (best_e % 32 == lane) v[best_e / 32] = -1.0f;
  }
  if (lane < top_k) {
    ids[lane] = my_id;
    weights[lane] = renormalize ? my_w / picked : my_w;
  }
  if (renormalize && top_k > 32 && lane == 0) {  // lane 0 wrote these itself
    for (int j = 32; j < top_k; ++j) weights[j] /= picked;
  }
  return lane < top_k ? my_id : -1;
}

// The whole grouping (ops::moe_group) by one block of any multiple of 32 threads (<= 512
// experts): shared-memory counts, block-padded offsets by a warp scan, slot scatter by atomics
// (the order within an expert varies, the per-row results do not). Reads a.topk_ids, which
// must be visible to the block (written before the launch, or by this block before a barrier).
__device__ __forceinline__ void group_block(const ops::MoeGroupArgs& a) {
  __shared__ int counts[512];
  __shared__ int offsets[512];
  const int E = static_cast<int>(a.experts), B = static_cast<int>(a.block_rows);
  for (int e = threadIdx.x; e < E; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  for (int64_t s = threadIdx.x; s < a.slots; s += blockDim.x) {
    const int e = a.topk_ids[s];
    if (e >= 0 && e < E) atomicAdd(&counts[e], 1);
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // block-padded offsets: each lane sums a run of experts, then a warp scan
    const int lane = threadIdx.x, per = (E + 31) / 32, first = min(lane * per, E), last = min(first + per, E);
    int local = 0;
    for (int e = first; e < last; ++e) local += (counts[e] + B - 1) / B * B;
    int incl = local;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    int off = incl - local;
    for (int e = first; e < last; ++e) {
      offsets[e] = off;
      off += (counts[e] + B - 1) / B * B;
    }
  }
  for (int64_t r = threadIdx.x; r < a.max_rows; r += blockDim.x) a.sorted_slots[r] = -1;
  for (int64_t b = threadIdx.x; b < a.max_rows / B; b += blockDim.x) a.block_expert[b] = -1;
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    a.expert_counts[e] = counts[e];
    const int first = offsets[e] / B, end = (offsets[e] + (counts[e] + B - 1) / B * B) / B;
    for (int b = first; b < end; ++b) a.block_expert[b] = e;
  }
  __syncthreads();
  // offsets[] becomes each expert's cursor.
  for (int64_t s = threadIdx.x; s < a.slots; s += blockDim.x) {
    const int e = a.topk_ids[s];
    if (e < 0 || e >= E) {
      a.slot_rows[s] = -1;
      continue;
    }
    const int row = atomicAdd(&offsets[e], 1);
    a.sorted_slots[row] = static_cast<int32_t>(s);
    a.slot_rows[s] = row;
  }
}

}  // namespace grt::cuda::moe
