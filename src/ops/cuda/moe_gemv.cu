// Grouped GEMVs for the expert MLPs at small batch (moe_gemv.h). At decode an expert gets a few
// rows, so the tiled GEMMs (16-row WMMA tiles, one 64-column tile per block, a synchronous K loop)
// leave the chip idle: at bs 1 only 8 experts x 12 column tiles of blocks run gate_up, each
// waiting on one load at a time. Here one warp owns one output row (gate and up rows together
// for gate_up) of one expert and streams it with 16-byte loads, 4 chunks in flight per lane, for
// up to 4 of the expert's rows at once; blocks of 8 warps tile the output rows, so every active
// expert's weights are read once by N / 8 blocks, which fills the SMs.
// Its likely limit (by reading; not profiled yet): every warp reads the activation rows of its
// block for its one output row, so activation traffic through L1/L2 grows as rows x N x K. On an
// H100 with qwen3-30b-a3b, at 256 slots of 128 experts (2 rows per expert on average) it still
// beat the tiled GEMMs, at 512 it lost, hence moe_gemv_max_slots = 2 E. A whole block per pass
// (16 accumulators, 125 registers, 2 blocks per SM) measured slower at every size past 4 tokens.
//
// Grid: x = output row tiles, y = group blocks (kMoeBlockRows rows of one expert each, from the
// device-side block table). Used blocks come first in the table and each holds at least one
// slot, so min(blocks, slots) covers them for any routing; unused blocks read -1 and exit.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/moe_gemv.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8, kThreads = kWarps * 32;
constexpr int kUnroll = 4;             // 16-byte weight chunks in flight per lane (and per matrix)
constexpr int kRowsAtOnce = 4;         // a block's rows sharing one pass over the weights
constexpr int kChunkElems = 8;         // bf16 per 16-byte chunk
constexpr int kMaxBlockRows = 32;      // one lane per row of a group block

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

using dense::warp_sum;

// Weights are read once: evict-first, so the few activation rows stay cached for all warps.
__device__ __forceinline__ uint4 load_weights(const bf16* p) { return __ldcs(reinterpret_cast<const uint4*>(p)); }

// Starts fetching a weight chunk into L2 (no register, no wait): issued before the block's row
// table is read and synchronised, so that round trip overlaps the first weight loads.
__device__ __forceinline__ void prefetch_l2(const bf16* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// out[r, n] = W_e[n, :] . a[src(r), :] for the used rows r of group block blockIdx.y (expert e).
// kGated: W_e holds gate rows [0, N) then up rows [N, 2N); the result is silu(gate) * up, each
// rounded to bf16 like transformers (and the tiled kernel); a row's source is x[slot / top_k].
// Otherwise the source row is r itself (act). Float32 sums; per row independent of the others.
template <bool kGated>
__global__ void __launch_bounds__(kThreads)
    grouped_gemv_kernel(const bf16* __restrict__ a_src, const int32_t* __restrict__ sorted_slots,
                        const int32_t* __restrict__ block_expert, int top_k, int block_rows,
                        const bf16* __restrict__ w, bf16* __restrict__ out, int N, int K) {
  // PDL (only when launched with the attribute; no-ops otherwise): the groups come from the
  // kernel before. Triggering at once lets the next kernel's blocks prefetch their weights.
  pdl_wait();
  pdl_trigger();
  const int b = blockIdx.y;
  const int e = block_expert[b];
  if (e < 0) return;  // a block no expert uses
  __shared__ int src_row[kMaxBlockRows];
  __shared__ int dst_row[kMaxBlockRows];
  __shared__ int used;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n = blockIdx.x * kWarps + warp;
  const bf16* wg = w + (static_cast<int64_t>(e) * (kGated ? 2 : 1) * N + n) * K;
  const bf16* wu = wg + static_cast<int64_t>(N) * K;  // up row (kGated only)
  if (n < N) {
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {  // the first pass's chunks
      const int k = lane * kChunkElems + i * 32 * kChunkElems;
      if (k < K) {
        prefetch_l2(wg + k);
        if (kGated) prefetch_l2(wu + k);
      }
    }
  }
  if (warp == 0) {  // compact the block's used rows (padding rows hold slot -1)
    const int r = b * block_rows + lane;
    const int slot = lane < block_rows ? sorted_slots[r] : -1;
    const unsigned mask = __ballot_sync(0xffffffffu, slot >= 0);
    if (slot >= 0) {
      const int pos = __popc(mask & ((1u << lane) - 1u));
      src_row[pos] = kGated ? slot / top_k : r;
      dst_row[pos] = r;
    }
    if (lane == 0) used = __popc(mask);
  }
  __syncthreads();
  if (n >= N) return;
  const int rows = used;
  for (int t0 = 0; t0 < rows; t0 += kRowsAtOnce) {
    const bf16* src[kRowsAtOnce];
#pragma unroll
    for (int t = 0; t < kRowsAtOnce; ++t) src[t] = a_src + static_cast<int64_t>(src_row[min(t0 + t, rows - 1)]) * K;
    float g[kRowsAtOnce] = {}, u[kRowsAtOnce] = {};
    for (int k0 = lane * kChunkElems; k0 < K; k0 += 32 * kChunkElems * kUnroll) {
      uint4 vg[kUnroll], vu[kUnroll];
#pragma unroll
      for (int i = 0; i < kUnroll; ++i) {  // every weight load issued before the first use
        const int k = k0 + i * 32 * kChunkElems;
        vg[i] = k < K ? load_weights(wg + k) : make_uint4(0, 0, 0, 0);
        if (kGated) vu[i] = k < K ? load_weights(wu + k) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < kUnroll; ++i) {
        const int k = k0 + i * 32 * kChunkElems;
        if (k >= K) continue;
        float fg[kChunkElems], fu[kChunkElems];
        unpack8(vg[i], fg);
        if (kGated) unpack8(vu[i], fu);
#pragma unroll
        for (int t = 0; t < kRowsAtOnce; ++t) {
          if (t0 + t >= rows) continue;  // warp-uniform
          float fx[kChunkElems];
          unpack8(*reinterpret_cast<const uint4*>(src[t] + k), fx);
#pragma unroll
          for (int j = 0; j < kChunkElems; ++j) {
            g[t] = fmaf(fg[j], fx[j], g[t]);
            if (kGated) u[t] = fmaf(fu[j], fx[j], u[t]);
          }
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kRowsAtOnce; ++t) {
      if (t0 + t >= rows) continue;
      g[t] = warp_sum(g[t]);
      if (kGated) u[t] = warp_sum(u[t]);
    }
    if (lane < kRowsAtOnce && t0 + lane < rows) {
      float v = 0.0f;
#pragma unroll
      for (int t = 0; t < kRowsAtOnce; ++t)  // lane t stores row t0 + t (registers indexed by constants)
        if (t == lane) {
          if (kGated) {
            const float gr = dense::round_to<bf16>(g[t]), ur = dense::round_to<bf16>(u[t]);
            v = dense::round_to<bf16>(gr / (1.0f + expf(-gr))) * ur;
          } else {
            v = g[t];
          }
        }
      out[static_cast<int64_t>(dst_row[t0 + lane]) * N + n] = __float2bfloat16_rn(v);
    }
  }
}

}  // namespace

namespace {

struct GemvGrid {
  int64_t blocks = 0, gate_tiles = 0, down_tiles = 0;
};

GemvGrid check_gemv(const ops::MoeExpertsArgs& a) {
  GRT_CHECK(a.block_rows >= 1 && a.block_rows <= kMaxBlockRows, "moe_experts (gemv): blocks of {} rows, expected 1..{}",
            a.block_rows, kMaxBlockRows);
  GRT_CHECK(a.hidden % kChunkElems == 0 && a.inter % kChunkElems == 0 && a.hidden <= 0x7fffffff &&
                a.inter <= 0x7fffffff,
            "moe_experts (gemv): hidden {} and inter {} must be multiples of {} within int32", a.hidden, a.inter,
            kChunkElems);
  GemvGrid g;
  // Every used block holds at least one slot, and used blocks come first in the table.
  g.blocks = std::min(a.max_rows / a.block_rows, a.slots);
  g.gate_tiles = (a.inter + kWarps - 1) / kWarps;
  g.down_tiles = (a.hidden + kWarps - 1) / kWarps;
  GRT_CHECK(g.blocks <= 65535 && std::max(g.gate_tiles, g.down_tiles) <= 0x7fffffff,
            "moe_experts (gemv): grid {} x {} exceeds CUDA's limits", std::max(g.gate_tiles, g.down_tiles), g.blocks);
  return g;
}

}  // namespace

void moe_experts_gemv_gate_up(cudaStream_t s, const ops::MoeExpertsArgs& a, int pdl_device) {
  const GemvGrid g = check_gemv(a);
  if (g.blocks <= 0) return;
  const int top_k = static_cast<int>(a.top_k), br = static_cast<int>(a.block_rows);
  const int H = static_cast<int>(a.hidden), I = static_cast<int>(a.inter);
  const dim3 grid(static_cast<unsigned>(g.gate_tiles), static_cast<unsigned>(g.blocks));
  const auto* x = static_cast<const bf16*>(a.x);
  const auto* w = static_cast<const bf16*>(a.gate_up);
  auto* act = static_cast<bf16*>(a.act);
  if (pdl_device >= 0)
    (void)launch_pdl(pdl_device, grouped_gemv_kernel<true>, grid, dim3(kThreads), 0, s, 1, x, a.sorted_slots,
                     a.block_expert, top_k, br, w, act, I, H);
  else
    grouped_gemv_kernel<true><<<grid, kThreads, 0, s>>>(x, a.sorted_slots, a.block_expert, top_k, br, w, act, I, H);
  GRT_CUDA_CHECK_LAUNCH("moe_experts gemv gate_up blocks={} hidden={} inter={}", g.blocks, a.hidden, a.inter);
}

void moe_experts_gemv(cudaStream_t s, const ops::MoeExpertsArgs& a) {
  const GemvGrid g = check_gemv(a);
  if (g.blocks <= 0) return;
  moe_experts_gemv_gate_up(s, a, -1);
  const int top_k = static_cast<int>(a.top_k), br = static_cast<int>(a.block_rows);
  const int H = static_cast<int>(a.hidden), I = static_cast<int>(a.inter);
  grouped_gemv_kernel<false><<<dim3(static_cast<unsigned>(g.down_tiles), static_cast<unsigned>(g.blocks)), kThreads, 0,
                               s>>>(static_cast<const bf16*>(a.act), a.sorted_slots, a.block_expert, top_k, br,
                                    static_cast<const bf16*>(a.down), static_cast<bf16*>(a.out), H, I);
  GRT_CUDA_CHECK_LAUNCH("moe_experts gemv down blocks={} hidden={} inter={}", g.blocks, a.hidden, a.inter);
}

}  // namespace grt::cuda
