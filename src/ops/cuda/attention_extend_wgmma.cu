// Paged extend attention on Hopper warpgroup MMA (wgmma.mma_async, sm_90a), head_dim 64 and
// 128, bf16/f16 in, f32 accumulate ("fa3-wg"; issue 18). One block per (pair of) 128-row q tiles
// of (q head, request), two warpgroups of 64 rows. Per 64-key tile each warpgroup computes
// S = Q·Kᵀ with Q and K read by the tensor cores straight from shared memory (descriptors, no
// ldmatrix), runs the online softmax on S in registers (lazy rescaling as in the FA2 V2 kernels),
// and O += P·V with P from registers and V read MN-major from shared memory. K/V rows are
// gathered through req_to_token with cp.async into the canonical 128-byte-swizzled layout, two
// stages, one barrier per tile; causal tiles wholly in a warpgroup's future are skipped and only
// tiles crossing the diagonal or the end are masked. No warp specialisation or TMA (the gather
// is per row): the softmax of one warpgroup overlaps the MMAs of the other and of the second
// block on the multiprocessor. H100, 16/8/128 causal at 4k tokens: 345 TFLOP/s with registers
// for 2 blocks per multiprocessor, 286 with 1 (bench/results/h100_2026-11-23_s4_fa2).
// fa3-ov / fa3-ovq / fa3-ov64 (session 5, wg_tile_ov): each warpgroup's softmax overlapped with
// its own next S and current O GEMM, a deeper ring; at head_dim 128 one block per multiprocessor
// (160 registers), so fa3-wg2 stays ahead on large grids: 335 vs 298 TFLOP/s at 4k; ahead on
// grids of <= 1 block per multiprocessor and at head_dim 64 (bench/results/h100_2026-11-23_s5_fa3).
// fa3-ws / fa3-wsp / fa3-wsn / fa3-wsnp (session 6, below): warp-specialised, a producer warpgroup
// and an mbarrier ring feeding two consumer warpgroups on the wg_tile_ov loop; the default on
// large grids at head_dim 128 (399 TFLOP/s at 4k, 450 at 8k, 16/8/128 causal) and on grids of
// about one block per multiprocessor (bench/results/h100_2026-11-24_s6_fa3ws).
// The building blocks these kernels share with fa3-ws (attention_extend_ws.cu) are in
// attention_wgmma.cuh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_extend_params.h"
#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/sm90a_device.h"

namespace grt::cuda {
namespace {

using namespace wg;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// fa3-wg / fa3-wg2: query tile `qt` (128 rows); ext: the request's clamped extend length; smem:
// 1024-aligned. Two stages, one barrier per tile; each warpgroup waits for its S GEMM before the
// softmax and for its O GEMM before the next tile.
template <typename T, int HD>
__device__ __forceinline__ void wg_tile(const ExtendParams& p, int qt, int ext, unsigned char* smem) {
  using C = WgCfg<HD>;
  WgTile<T, HD, C> w(p, qt, ext, smem, static_cast<int>(threadIdx.x));
  constexpr int kCB = WgTile<T, HD, C>::kCB;
  const int num_tiles = w.num_tiles, my_tiles = w.group_tiles();
  w.load_q();
  w.load_slots(0);
  w.issue_tile(0);
  cp_async_commit();  // Q and tile 0
  if (num_tiles > 1) w.load_slots(1);

  float o[kCB][32];
  float s[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int cb = 0; cb < kCB; ++cb) o[cb][i] = 0.0f;
  }
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const float sl2 = p.scale_log2;

  for (int t = 0; t < num_tiles; ++t) {
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();  // tile t landed for all; every warpgroup is done with tile t - 1's stage
    if (t + 1 < num_tiles) w.issue_tile((t + 1) & 1);
    cp_async_commit();
    if (t + 2 < num_tiles) w.load_slots(t + 2);
    if (t < my_tiles) {  // else every key is in the warpgroup's future
      fence_regs(s);
      wgmma_fence();
      w.issue_s(s, t & 1);
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(s);

      w.mask(s, t);
      float mx[2], alpha[2];
      if (tile_max(s, sl2, m, mx)) {
        new_max(m, l, mx, alpha);
        scale_o(o, alpha);
      }
      exp_rows(s, m, l, sl2);
      uint32_t pf[4][4];
      pack_p<T>(s, pf);

#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      wgmma_fence();
      w.issue_o(o, pf, t & 1);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
    }
  }
  cp_async_wait<0>();
  w.store(o, l);
}

// fa3-ov / fa3-ov64 / fa3-ovq: as wg_tile with GROUPS warpgroups (64 q rows each) and a ring of STAGES
// (>= 3) K/V tiles, loaded STAGES - 1 tiles ahead; each warpgroup overlaps its softmax with its
// own GEMMs: it issues S(t + 1) = Q·K(t + 1)ᵀ and O += P(t)·V(t) back to back, waits for S only
// (wgmma.wait_group 1), runs the softmax of tile t + 1 while the O GEMM runs, then waits for O
// (rescaling it where the lazy rule says so) and packs P(t + 1). One barrier per tile. QREG
// (fa3-ovq): Q in registers (32 more at head_dim 128), so that S reads only K from shared memory
// (a 64 x 64 S GEMM with both operands there needs the whole shared-memory bandwidth).
template <typename T, int HD, int GROUPS, int STAGES, bool QREG>
__device__ __forceinline__ void wg_tile_ov(const ExtendParams& p, int qt, int ext, unsigned char* smem) {
  static_assert(STAGES >= 3, "tile t + 1 is read while tile t + STAGES - 1 is loaded");
  using C = WgCfg<HD, GROUPS, STAGES>;
  WgTile<T, HD, C> w(p, qt, ext, smem, static_cast<int>(threadIdx.x));
  constexpr int kCB = WgTile<T, HD, C>::kCB;
  const int num_tiles = w.num_tiles;
  uint32_t qf[QREG ? HD / 16 : 1][4];
  if constexpr (QREG) w.load_q_regs(qf);
  else w.load_q();
  const auto issue_s = [&](float(&sv)[32], int stage) {
    if constexpr (QREG) w.issue_s_rs(sv, qf, stage);
    else w.issue_s(sv, stage);
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    w.load_slots(i);
    if (i < num_tiles) w.issue_tile(i);
    cp_async_commit();  // group i: tile i (Q with tile 0)
  }
  w.load_slots(STAGES - 1);

  float o[kCB][32];
  float s[32];
  uint32_t pf[4][4];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int cb = 0; cb < kCB; ++cb) o[cb][i] = 0.0f;
  }
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) pf[kk][j] = 0u;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const float sl2 = p.scale_log2;

  cp_async_wait<STAGES - 2>();  // Q and tile 0
  fence_proxy_async();
  __syncthreads();
  if (num_tiles > 0) {  // S(0) and P(0); O is zero, so a rescale changes nothing
    fence_regs(s);
    wgmma_fence();
    issue_s(s, 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    w.mask_voted(s, 0);
    float mx[2], alpha[2];
    tile_max(s, sl2, m, mx);
    new_max_lazy(m, l, mx, alpha);
    exp_rows(s, m, l, sl2);
    pack_p<T>(s, pf);
  }

  // Each wgmma's issue and wait sit in one branch (ptxas serializes every wgmma when a branch it
  // cannot prove uniform separates them): both warpgroups run every tile of the block (a tile
  // wholly in a warpgroup's future is masked to nothing: at most one per q tile), the mask
  // decision is a warp vote, and the running max and row sum update without a branch (only O's
  // rescale follows the vote, after its GEMM).
  for (int t = 0; t < num_tiles; ++t) {
    // Tile t + 1 landed for all; every warpgroup is done with tile t - 1, whose stage is refilled.
    cp_async_wait<STAGES - 3>();
    fence_proxy_async();
    __syncthreads();
    if (t + STAGES - 1 < num_tiles) w.issue_tile((t + STAGES - 1) % STAGES);
    cp_async_commit();
    w.load_slots(t + STAGES);
    if (t + 1 < num_tiles) {
      fence_regs(s);
      wgmma_fence();
      issue_s(s, (t + 1) % STAGES);
      wgmma_commit();
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      wgmma_fence();
      w.issue_o(o, pf, t % STAGES);
      wgmma_commit();
      wgmma_wait<1>();  // S(t + 1); O(t) may still run
      fence_regs(s);
      w.mask_voted(s, t + 1);
      float mx[2], alpha[2];
      const bool grow = tile_max(s, sl2, m, mx);
      new_max_lazy(m, l, mx, alpha);
      exp_rows(s, m, l, sl2);
      wgmma_wait<0>();
      // O(t) done: its accumulators and the P(t) registers it read are free again.
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      if (grow) scale_o(o, alpha);
      pack_p<T>(s, pf);
    } else {  // the last tile: O only
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      wgmma_fence();
      w.issue_o(o, pf, t % STAGES);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
    }
  }
  cp_async_wait<0>();
  w.store(o, l);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Tile pairing and heavy-first order as extend_fa2_kernel. OCC: blocks per multiprocessor the
// register budget aims at (fa3-wg 1: 174 registers at head_dim 128; fa3-wg2 2: 128, with a few
// spills); MODE 0: wg_tile; 1: the overlapped tile loop (wg_tile_ov) with GROUPS warpgroups and
// STAGES stages; 2: the same with Q in registers.
template <typename T, int HD, int OCC, int GROUPS, int STAGES, int MODE>
__global__ void __launch_bounds__(WgCfg<HD, GROUPS, STAGES>::kThreads, OCC) extend_wgmma_kernel(ExtendParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgCfg<HD, GROUPS, STAGES>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  const int ext = min(max(p.extend_lens[blockIdx.z], 0), p.max_extend_len);
  const int tiles = (ext + C::kBQ - 1) / C::kBQ;
  int first = 0, second = -1;
  if (!attn::extend_block_tiles(p.pair_q_tiles, tiles, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), first,
                          second))
    return;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    const int qt = pass == 0 ? first : second;
    if (qt < 0) break;
    if (pass == 1) __syncthreads();
    if constexpr (MODE > 0) wg_tile_ov<T, HD, GROUPS, STAGES, MODE == 2>(p, qt, ext, smem);
    else wg_tile<T, HD>(p, qt, ext, smem);
  }
#else
  __trap();  // launch_extend_wgmma refuses devices other than sm_90
#endif
}

template <typename T, int HD, int OCC, int GROUPS, int STAGES, int MODE>
void launch_wg(cudaStream_t st, const ExtendParams& p) {
  using C = WgCfg<HD, GROUPS, STAGES>;
  auto kernel = extend_wgmma_kernel<T, HD, OCC, GROUPS, STAGES, MODE>;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for attention_extend wgmma (head_dim {})", C::kSmem, HD);
  const int tiles = (p.max_extend_len + C::kBQ - 1) / C::kBQ;
  dim3 grid(static_cast<unsigned>(p.pair_q_tiles ? (tiles + 1) / 2 : tiles), static_cast<unsigned>(p.nq),
            static_cast<unsigned>(p.num_reqs));
  kernel<<<grid, C::kThreads, C::kSmem, st>>>(p);
}

template <typename T, int HD>
void launch_wg_variant(cudaStream_t st, const ExtendParams& p, WgVariant v) {
  switch (v) {
    case WgVariant::kWg: launch_wg<T, HD, 1, 2, 2, 0>(st, p); return;
    case WgVariant::kWg2: launch_wg<T, HD, 2, 2, 2, 0>(st, p); return;
    case WgVariant::kOv: launch_wg<T, HD, 1, 2, 4, 1>(st, p); return;
    case WgVariant::kOv64: launch_wg<T, HD, 2, 1, 3, 1>(st, p); return;
    case WgVariant::kOvQ: launch_wg<T, HD, 1, 2, 4, 2>(st, p); return;
    default: GRT_FAIL("attention_extend wgmma: variant {} is warp-specialised (attention_extend_ws.cu)", static_cast<int>(v));
  }
}

bool warp_specialised(WgVariant v) {
  return v == WgVariant::kWs || v == WgVariant::kWsP || v == WgVariant::kWsN || v == WgVariant::kWsNP ||
         v == WgVariant::kWs128 || v == WgVariant::kWs128P || v == WgVariant::kWs128N || v == WgVariant::kWs128S ||
         v == WgVariant::kWs128NS || v == WgVariant::kWs128NSQ || v == WgVariant::kWs128NSK ||
         v == WgVariant::kWs128NSO || v == WgVariant::kWs128NS2 ||
         v == WgVariant::kWsNH || v == WgVariant::kWsNSH || v == WgVariant::kWsNPH || v == WgVariant::kWsN64;
}

}  // namespace

bool wgmma_supports(const ExtendParams& p, DType dtype) { return fa2_supports(p, dtype) && sm90a_device(); }

int wgmma_q_tile(WgVariant v) { return v == WgVariant::kOv64 || v == WgVariant::kWsN64 ? 64 : 128; }

void launch_extend_wgmma(cudaStream_t stream, const ExtendParams& p, DType dtype, WgVariant v) {
  GRT_CHECK(wgmma_supports(p, dtype),
            "attention_extend wgmma: unsupported case (dtype {}, head_dim {}; needs an sm_90 GPU, bf16/f16, head_dim "
            "64 or 128, 16-byte aligned rows)",
            dtype_name(dtype), p.hd);
  if (warp_specialised(v)) {
    launch_extend_wgmma_ws(stream, p, dtype, v);
    return;
  }
  with_type_and_head_dim(dtype, p.hd, [&]<typename T, int HD>() { launch_wg_variant<T, HD>(stream, p, v); });
}

}  // namespace grt::cuda