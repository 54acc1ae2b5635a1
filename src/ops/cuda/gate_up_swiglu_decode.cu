// The decode-sized gate_up GEMM with SwiGLU in its epilogue (see gate_up_swiglu_decode.h). Why: at
// llama-3.1-8b's decode batch 64 a layer ran cuBLASLt's gate_up GEMM (M 64, N 28672, K 4096: 235 MB
// of weights, 85.5 us isolated = 2.75 TB/s) and then silu_and_mul (5.1 us isolated), and the
// cuBLASLt launch carries no PDL attribute, so it also waits for the norm before it starts. At
// M <= 64 the step streams the weights: the kernel must keep DRAM busy, not the tensor cores.
//
// Shape: a block owns 64 rows x BN output columns i0 .. i0 + BN - 1 (gate_up rows i0 .. and
// inter + i0 .., 2 x BN weight rows). 256 threads = 2 warpgroups: warpgroup 0 copies each 64-wide
// K slice of the x tile (64 x 64, 8 KB; rows past M zero-filled, never read) and the weight tile
// (2 BN x 64) with cp.async into the 128-byte-swizzled wgmma layout of attention_wgmma.cuh, into a
// ring of kStages stages with "full" / "empty" mbarriers (the protocol of gate_up_swiglu.cu);
// warpgroup 1 runs per slice 4 k16 steps of m64n128k16 wgmma: BN 64 one instruction whose 128
// columns are the 64 gate then the 64 up rows (so a lane holds gate and up of the same output in
// the same register slots of its two halves), BN 128 two (gate, up), as the prefill kernel.
// - BN 64: inter / 64 blocks (llama: 224), a 24 KB stage, 4 stages (97 KB), two blocks an SM,
//   so every SM streams (112 blocks of BN 128 leave 20 of the H100's 132 idle).
// - BN 128: 112 blocks for llama, a 40 KB stage, 5 stages (201 KB), one block an SM; half the x
//   re-reads from L2 of BN 64. The A/B picks (bench/results/h100_2026-11-24_s10_sw64).
// Bytes in flight: the H100 streams at its full rate from >= 32 KB in flight an SM (session 5's
// stream probe); BN 64 keeps up to 2 x 3 x 16 KB of weights in flight an SM, BN 128 4 x 32 KB.
// PDL: the weights are constants of the forward, so the producer requests the first kStages
// slices' weight tiles before griddepcontrol.wait (while the norm before it finishes) and the x
// tiles after; the consumer triggers the next launch after its main loop.
//
// Rounding and determinism: as gate_up_swiglu.cu (f32 gate / up sums, silu rounded to bf16, the
// product rounded to bf16; no split-K, no atomics; one fixed wgmma order per output). wgmma rows
// are independent: row r's bits depend on x row r and the weights only, whatever M and the padding.
#include "ops/cuda/gate_up_swiglu_decode.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gate_up_swiglu_common.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/sm90a_device.h"
#include "ops/cuda/smem_mbarrier.cuh"
#include "ops/cuda/tensor_copy.cuh"
#include "ops/cuda/tensor_map.h"

namespace grt::cuda {
namespace {

constexpr int kBM = static_cast<int>(kDecodeSwigluTileM);
constexpr int kBK = static_cast<int>(kDecodeSwigluTileK);
constexpr int kThreads = 256;  // producer warpgroup + one consumer warpgroup

template <int BN>
struct DecodeCfg {
  static constexpr int kStages = BN == 64 ? 4 : 5;
  static constexpr int kMinBlocks = BN == 64 ? 2 : 1;  // blocks an SM (__launch_bounds__)
  static constexpr uint32_t kABytes = kBM * kBK * 2;   // 8 KB: the x rows of the tile
  static constexpr uint32_t kBBytes = 2 * BN * kBK * 2;  // the gate rows, then the up rows
  static constexpr uint32_t kStageBytes = kABytes + kBBytes;
  static constexpr uint32_t kBarOffset = kStages * kStageBytes;         // full[kStages], empty[kStages]
  static constexpr size_t kSmem = size_t{kBarOffset} + 16 * kStages + 1024;  // + alignment slack
};
// Two BN-64 blocks (and their 1 KB of reserved shared memory each) fit an H100 SM's 228 KB.
static_assert(2 * (DecodeCfg<64>::kSmem + 1024) <= 228 * 1024, "BN 64 must fit two blocks an SM");
static_assert(DecodeCfg<128>::kSmem <= 227 * 1024, "BN 128 must fit one block an SM");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
using attn::cp_async16;
using attn::pack2;
using wg::fence_proxy_async;
using wg::sw128;
using wg::sw128_desc;
using wg::wgmma_commit;
using wg::wgmma_fence;
using wg::wgmma_ss128;
using wg::wgmma_wait;
using swiglu_gemm::swiglu;
using tma::cp_async_mbar_arrive;
using tma::mbar_arrive;


// The producer (gate_up_swiglu_common.cuh): the weight rows and the x tile of a slice, issued
// separately (the first stages' weights go out before the PDL wait).
template <int BN>
using DecodeProducer = swiglu_gemm::CpAsyncSliceProducer<kBM, BN, DecodeCfg<BN>::kABytes>;
static_assert(DecodeProducer<64>::kBK == kBK, "the producer's slice width");

// Stores 64 output columns col0 .. of this warp's 16 rows from an m64n128 accumulator half pair:
// this lane holds rows g and g + 8 of the warp's 16, columns 8j + 2t4 (+1) at [4j + 0/1] (row g)
// and [4j + 2/3] (row g + 8); gate in `g`, up in `u` at the same slots.
__device__ __forceinline__ void store64(__nv_bfloat16* out, int64_t inter, int rows, int row0, int64_t col0,
                                        const float (&g)[32], const float (&u)[32]) {
  const int lane = threadIdx.x % 32, grp = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = row0 + grp + 8 * i;
    if (r >= rows) continue;
    __nv_bfloat16* o = out + static_cast<int64_t>(r) * inter + col0 + 2 * t4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = 4 * j + 2 * i;
      *reinterpret_cast<uint32_t*>(o + 8 * j) =
          pack2<__nv_bfloat16>(swiglu(g[e], u[e]), swiglu(g[e + 1], u[e + 1]));
    }
  }
}

// The consumer warpgroup's main loop: the 64 x BN gate and up sums over all K slices.
template <int BN>
__device__ __forceinline__ void consume(uint32_t ring, uint64_t* full, uint64_t* empty, int kts, float (&g0)[32],
                                        float (&g1)[32], float (&u0)[32], float (&u1)[32]) {
  using C = DecodeCfg<BN>;
#pragma unroll 1
  for (int kt = 0; kt < kts; ++kt) {
    const int s = kt % C::kStages;
    tma::mbar_wait(full + s, static_cast<uint32_t>(kt / C::kStages) & 1u);
    fence_proxy_async();  // the producer's cp.async writes (generic proxy) before wgmma's reads
    const uint32_t a = ring + s * C::kStageBytes;
    const uint32_t b = a + C::kABytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const int acc = kt > 0 || kk > 0;
      const uint64_t da = sw128_desc(a + kk * 32);
      if constexpr (BN == 64) {
        wgmma_ss128<__nv_bfloat16>(g0, u0, da, sw128_desc(b + kk * 32), acc);  // gate | up columns
      } else {
        wgmma_ss128<__nv_bfloat16>(g0, g1, da, sw128_desc(b + kk * 32), acc);
        wgmma_ss128<__nv_bfloat16>(u0, u1, da, sw128_desc(b + BN * 128 + kk * 32), acc);
      }
    }
    wgmma_commit();
    // One slice's group stays in flight: the previous one is done, its stage goes back.
    wgmma_wait<1>();
    if (kt > 0) mbar_arrive(empty + (kt - 1) % C::kStages);
  }
  wgmma_wait<0>();
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: x over the inter / BN column tiles, y over the 64-row tiles.
template <int BN>
__global__ void __launch_bounds__(kThreads, DecodeCfg<BN>::kMinBlocks)
    gate_up_swiglu_decode_kernel(const __nv_bfloat16* x, int64_t xs, const __nv_bfloat16* w, __nv_bfloat16* out,
                                 int64_t rows_total, int64_t inter, int64_t k) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = DecodeCfg<BN>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (tma::smem_addr(smem_raw) & 1023)) & 1023);
  const uint32_t ring = tma::smem_addr(smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + C::kBarOffset);
  uint64_t* empty = full + C::kStages;
  const int i0 = static_cast<int>(blockIdx.x) * BN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kBM), rows_total - m0));
  const int kts = static_cast<int>(k / kBK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < C::kStages; ++s) {
      tma::mbar_init(full + s, 128);   // the producer's threads, through their copies
      tma::mbar_init(empty + s, 128);  // the consumer's threads
    }
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    const DecodeProducer<BN> prod(x + m0 * xs, xs, w, k, inter, i0, rows, static_cast<int>(threadIdx.x));
    const int pre = min(C::kStages, kts);
    // The weights are no kernel's output (pdl.cuh rule 1): the first stages' tiles go out before
    // the wait, while the kernel before this one finishes.
    for (int s = 0; s < pre; ++s) prod.copy_w(ring + s * C::kStageBytes, s);
    pdl_wait();  // x is the predecessor's output
    for (int s = 0; s < pre; ++s) {
      prod.copy_x(ring + s * C::kStageBytes, s);
      cp_async_mbar_arrive(full + s);
    }
#pragma unroll 1
    for (int kt = pre; kt < kts; ++kt) {
      const int s = kt % C::kStages;
      tma::mbar_wait(empty + s, (static_cast<uint32_t>(kt / C::kStages) & 1u) ^ 1u);
      prod.copy_w(ring + s * C::kStageBytes, kt);
      prod.copy_x(ring + s * C::kStageBytes, kt);
      cp_async_mbar_arrive(full + s);
    }
    attn::cp_async_wait<0>();
    pdl_trigger();
  } else {
    pdl_wait();  // reads nothing before it; waits so the contract's "every thread waits" holds
    float g0[32], g1[32], u0[32], u1[32];
    consume<BN>(ring, full, empty, kts, g0, g1, u0, u1);
    pdl_trigger();  // the rest is the store: the next kernel may start its launch
    const int row0 = 16 * ((static_cast<int>(threadIdx.x) / 32) % 4);
    __nv_bfloat16* o = out + m0 * inter;
    store64(o, inter, rows, row0, i0, g0, u0);
    if constexpr (BN == 128) store64(o, inter, rows, row0, i0 + 64, g1, u1);
  }
#else
  __trap();  // callers check gate_up_swiglu_decode_device_ok first
#endif
}

template <int BN>
void launch(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t inter,
            int64_t k) {
  using C = DecodeCfg<BN>;
  const int64_t row_tiles = (rows + kBM - 1) / kBM;
  GRT_CHECK(row_tiles <= 65535 && inter / BN <= 0x7fffffff && inter <= 0x7fffffff,
            "gate_up_swiglu_decode: [{}, {}] exceeds one grid", rows, inter);
  cudaStream_t s = dense::launch_stream(d);
  GRT_CUDA_CHECK(cudaFuncSetAttribute(gate_up_swiglu_decode_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for gate_up_swiglu_decode (BN {})", C::kSmem, BN);
  dim3 grid(static_cast<unsigned>(inter / BN), static_cast<unsigned>(row_tiles));
  (void)launch_pdl(d.index, gate_up_swiglu_decode_kernel<BN>, grid, dim3(kThreads), C::kSmem, s, 1,
                   static_cast<const __nv_bfloat16*>(x), x_stride, static_cast<const __nv_bfloat16*>(w),
                   static_cast<__nv_bfloat16*>(out), rows, inter, k);
  GRT_CUDA_CHECK_LAUNCH("gate_up_swiglu_decode rows={} inter={} k={} tile_n={}", rows, inter, k, BN);
}

// ---- The TMA-fed form (GRAPHRT_DECODE_SWIGLU_GEMM=tma; session 11, compiled, not yet run) ----
// Why: the cp.async n64 kernel streamed the weights at 2.52 TB/s under ncu against cuBLASLt's
// 2.71 (93.4 vs 87.1 us, bench/results/h100_2026-11-24_s10_sw64). Little's law: 3 TB/s x 1.5-2 us
// of loaded latency = 4.5-6 MB in flight on the GPU = 20-27 KB a block over its 224 resident
// blocks. The cp.async form has at most 3 of its 4 stages in flight (its consumer keeps a stage
// until the next slice's wgmma is issued: wgmma_wait<1>), 48 KB of weights a block (10.8 MB),
// which is enough at 2 us but is what 2.52 TB/s needs if the latency near the DRAM peak is ~4.3
// us; and its copies are 16-byte requests from 128 threads (the prefill 192t showed TMA from one
// thread beating per-thread cp.async: 106 vs 120 us). The TMA form:
// - one producer warp (warp 4; lane 0 issues) instead of a producer warpgroup: each slice is
//   three bulk tensor copies (x box 64 x 64 rows, gate rows i0.., up rows inter + i0.., 8 KB
//   each, 128-byte swizzle: the layout the cp.async form writes) completing on "full" barriers
//   by byte count; no thread fences (the copies write through the async proxy);
// - separate rings for the weights (kWStages x 16 KB, from DRAM) and x (kXStages x 8 KB, an L2
//   hit: x is 512 KB read by every block), so the DRAM stream gets the deeper ring;
// - the consumer releases a slice's stages right after its own wgmma completed (wgmma_wait<0>:
//   ~0.3 us of tensor work against ~1.3 us of DRAM time a slice and block), so 4-5 weight stages
//   are in flight: 64-80 KB a block, 14.7-18.4 MB on the GPU, enough for 4.9-6 us of loaded
//   latency at 3 TB/s (~1.7x the cp.async form).
// Shared memory: 5 x 16 + 3 x 8 = 104 KB + barriers + alignment slack = 107,648 B: still two
// blocks an SM (224 blocks on 132 SMs in one wave; a block may use 228 KB / 2 - 1 KB reserved =
// 115,712 B). A 6th weight stage (124,032 B) or a 4th x stage (115,840 B) would not fit; the x
// ring keeps 2 slices (~2.6 us) of lookahead for its L2 hits.
// Numerics: the same 4 x m64n128k16 wgmma a slice over the same slices in the same order, on the
// same shared-memory layout, and the same epilogue (store64) as the n64 cp.async kernel: the same
// bits (tested). x rows past M: the x tensor map's dims are [rows_total, k], so TMA zero-fills
// box rows >= M; wgmma rows are independent, so a row's bits do not depend on the other rows.
struct TmaCfg {
  static constexpr int kWStages = 5;
  static constexpr int kXStages = 3;
  static constexpr int kThreads = 160;  // one consumer warpgroup + one producer warp
  static constexpr uint32_t kXBytes = kBM * kBK * 2;      // 8 KB: the x rows of a slice
  static constexpr uint32_t kWBytes = 2 * 64 * kBK * 2;   // 16 KB: 64 gate rows, then 64 up rows
  static constexpr uint32_t kXRing = kWStages * kWBytes;  // the x ring follows the weight ring
  static constexpr uint32_t kBars = kXRing + kXStages * kXBytes;
  // wfull[kWStages], wempty[kWStages], xfull[kXStages], xempty[kXStages]
  static constexpr uint32_t kWFull = kBars, kWEmpty = kWFull + 8 * kWStages;
  static constexpr uint32_t kXFull = kWEmpty + 8 * kWStages, kXEmpty = kXFull + 8 * kXStages;
  static constexpr size_t kSmem = size_t{kXEmpty} + 8 * kXStages + 1024;  // + alignment slack
};
static_assert(TmaCfg::kWBytes % 1024 == 0 && TmaCfg::kXBytes % 1024 == 0, "swizzle atoms are 1024-byte aligned");
static_assert(2 * (TmaCfg::kSmem + 1024) <= 228 * 1024, "the TMA form must fit two blocks an SM");
static_assert(2 * (TmaCfg::kSmem + TmaCfg::kWBytes + 1024) > 228 * 1024, "a 6th weight stage would not fit");
static_assert(kBK == static_cast<int>(kTensorMapBoxCols), "a tensor-map box spans one K slice");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The consumer warpgroup's main loop of the TMA form: the n64 wgmma sequence of consume<64> on
// stages awaited and released per ring.
__device__ __forceinline__ void consume_tma(uint32_t ring, int kts, float (&g0)[32], float (&u0)[32]) {
  using C = TmaCfg;
#pragma unroll 1
  for (int kt = 0; kt < kts; ++kt) {
    const int sw = kt % C::kWStages, sx = kt % C::kXStages;
    smem_mbar::mbar_wait(ring + C::kXFull + 8 * sx, static_cast<uint32_t>(kt / C::kXStages) & 1u);
    smem_mbar::mbar_wait(ring + C::kWFull + 8 * sw, static_cast<uint32_t>(kt / C::kWStages) & 1u);
    const uint32_t a = ring + C::kXRing + sx * C::kXBytes;
    const uint32_t b = ring + sw * C::kWBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)
      wgmma_ss128<__nv_bfloat16>(g0, u0, sw128_desc(a + kk * 32), sw128_desc(b + kk * 32), kt > 0 || kk > 0);
    wgmma_commit();
    // Done with this slice before its stages go back: the copies then run kWStages - 1 ahead.
    wgmma_wait<0>();
    smem_mbar::mbar_arrive(ring + C::kXEmpty + 8 * sx);
    smem_mbar::mbar_arrive(ring + C::kWEmpty + 8 * sw);
  }
}

// The producer's copies of slice kt: the weight tile (gate rows i0.., then up rows inter + i0..)
// or the x tile (rows m0.., zero past the map's rows), each announced on its "full" barrier.
__device__ __forceinline__ void load_w_tma(uint32_t ring, const CUtensorMap* wmap, int kt, int i0, int inter) {
  using C = TmaCfg;
  const int s = kt % C::kWStages;
  const uint32_t stage = ring + s * C::kWBytes, full = ring + C::kWFull + 8 * s;
  smem_mbar::mbar_arrive_expect_tx(full, C::kWBytes);
  tma::tma_load_2d(stage, wmap, kt * kBK, i0, full);
  tma::tma_load_2d(stage + 64 * 128, wmap, kt * kBK, inter + i0, full);
}
__device__ __forceinline__ void load_x_tma(uint32_t ring, const CUtensorMap* xmap, int kt, int m0) {
  using C = TmaCfg;
  const int s = kt % C::kXStages;
  const uint32_t full = ring + C::kXFull + 8 * s;
  smem_mbar::mbar_arrive_expect_tx(full, C::kXBytes);
  tma::tma_load_2d(ring + C::kXRing + s * C::kXBytes, xmap, kt * kBK, m0, full);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: x over the inter / 64 column tiles, y over the 64-row tiles (as the n64 kernel).
__global__ void __launch_bounds__(TmaCfg::kThreads, 2)
    gate_up_swiglu_decode_tma_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                                     __nv_bfloat16* out, int64_t rows_total, int64_t inter, int64_t k) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = TmaCfg;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = tma::smem_addr(smem_raw);
  const uint32_t ring = raw + ((1024 - (raw & 1023)) & 1023);
  const int i0 = static_cast<int>(blockIdx.x) * 64;
  const int m0 = static_cast<int>(blockIdx.y) * kBM;
  const int kts = static_cast<int>(k / kBK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < C::kWStages; ++s) {
      smem_mbar::mbar_init(ring + C::kWFull + 8 * s, 1);     // the producer's expect_tx (and the bytes)
      smem_mbar::mbar_init(ring + C::kWEmpty + 8 * s, 128);  // the consumer's threads
    }
    for (int s = 0; s < C::kXStages; ++s) {
      smem_mbar::mbar_init(ring + C::kXFull + 8 * s, 1);
      smem_mbar::mbar_init(ring + C::kXEmpty + 8 * s, 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // seen by the TMA unit
  }
  __syncthreads();
  if (threadIdx.x >= 128) {
    const bool issues = threadIdx.x == 128;
    const int wpre = min(C::kWStages, kts), xpre = min(C::kXStages, kts);
    // The weights are no kernel's output (pdl.cuh rule 1): the first stages' tiles go out before
    // the wait, while the kernel before this one finishes.
    if (issues) {
      for (int kt = 0; kt < wpre; ++kt) load_w_tma(ring, &wmap, kt, i0, static_cast<int>(inter));
    }
    pdl_wait();  // x is the predecessor's output
    if (issues) {
      for (int kt = 0; kt < xpre; ++kt) load_x_tma(ring, &xmap, kt, m0);
      // Slice c's stages come back once the consumer has multiplied it: then x slice
      // c + kXStages and weight slice c + kWStages go into them.
#pragma unroll 1
      for (int c = 0; c < kts; ++c) {
        const int jx = c + C::kXStages, jw = c + C::kWStages;
        if (jx < kts) {
          smem_mbar::mbar_wait(ring + C::kXEmpty + 8 * (jx % C::kXStages),
                               (static_cast<uint32_t>(jx / C::kXStages) & 1u) ^ 1u);
          load_x_tma(ring, &xmap, jx, m0);
        }
        if (jw < kts) {
          smem_mbar::mbar_wait(ring + C::kWEmpty + 8 * (jw % C::kWStages),
                               (static_cast<uint32_t>(jw / C::kWStages) & 1u) ^ 1u);
          load_w_tma(ring, &wmap, jw, i0, static_cast<int>(inter));
        }
      }
    }
    pdl_trigger();
  } else {
    pdl_wait();  // reads nothing before it; waits so the contract's "every thread waits" holds
    float g0[32], u0[32];
    consume_tma(ring, kts, g0, u0);
    pdl_trigger();  // the rest is the store: the next kernel may start its launch
    const int row0 = 16 * (static_cast<int>(threadIdx.x) / 32);
    const int rows = static_cast<int>(min(static_cast<int64_t>(kBM), rows_total - m0));
    store64(out + m0 * inter, inter, rows, row0, i0, g0, u0);
  }
#else
  __trap();  // callers check gate_up_swiglu_decode_device_ok first
#endif
}

void launch_tma(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t inter,
                int64_t k) {
  using C = TmaCfg;
  const int64_t row_tiles = (rows + kBM - 1) / kBM;
  // Tensor-map coordinates are 32-bit: rows, 2 x inter and k must fit an int.
  GRT_CHECK(row_tiles <= 65535 && rows <= 0x7fffffff && 2 * inter <= 0x7fffffff && k <= 0x7fffffff,
            "gate_up_swiglu_decode (tma): [{}, {}] x K {} exceeds one grid", rows, inter, k);
  const CUtensorMap xmap =
      bf16_tensor_map("gate_up_swiglu_decode x", x, rows, k, (rows > 1 ? x_stride : k) * 2, static_cast<uint32_t>(kBM));
  const CUtensorMap wmap = bf16_tensor_map("gate_up_swiglu_decode gate_up", w, 2 * inter, k, k * 2, 64);
  cudaStream_t s = dense::launch_stream(d);
  GRT_CUDA_CHECK(cudaFuncSetAttribute(gate_up_swiglu_decode_tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for gate_up_swiglu_decode (tma)", C::kSmem);
  dim3 grid(static_cast<unsigned>(inter / 64), static_cast<unsigned>(row_tiles));
  (void)launch_pdl(d.index, gate_up_swiglu_decode_tma_kernel, grid, dim3(C::kThreads), C::kSmem, s, 1, xmap, wmap,
                   static_cast<__nv_bfloat16*>(out), rows, inter, k);
  GRT_CUDA_CHECK_LAUNCH("gate_up_swiglu_decode (tma) rows={} inter={} k={}", rows, inter, k);
}

}  // namespace

bool gate_up_swiglu_decode_device_ok() { return sm90a_device(); }

int gate_up_swiglu_decode_sms(int index) {
  static std::atomic<int> cached[64] = {};
  GRT_CHECK(index >= 0 && index < 64, "gate_up_swiglu_decode: device index {} outside 0..63", index);
  int n = cached[index].load(std::memory_order_relaxed);
  if (n == 0) {
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, index), "reading the SM count of cuda:{}",
                   index);
    cached[index].store(n, std::memory_order_relaxed);
  }
  return n;
}

void gate_up_swiglu_decode(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                           int64_t inter, int64_t k, int64_t tile_n) {
  if (rows == 0) return;
  GRT_CHECK(gate_up_swiglu_decode_device_ok(), "gate_up_swiglu_decode: needs an sm_90 GPU and sm_90a code in this build");
  GRT_CHECK(tile_n == kDecodeSwigluTileN64 || tile_n == kDecodeSwigluTileN128,
            "gate_up_swiglu_decode: tile_n {} is not {} or {}", tile_n, kDecodeSwigluTileN64, kDecodeSwigluTileN128);
  if (tile_n == kDecodeSwigluTileN64) launch<64>(d, x, x_stride, w, out, rows, inter, k);
  else launch<128>(d, x, x_stride, w, out, rows, inter, k);
}

void gate_up_swiglu_decode_tma(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                               int64_t inter, int64_t k) {
  if (rows == 0) return;
  GRT_CHECK(gate_up_swiglu_decode_device_ok(),
            "gate_up_swiglu_decode (tma): needs an sm_90 GPU and sm_90a code in this build");
  launch_tma(d, x, x_stride, w, out, rows, inter, k);
}

}  // namespace grt::cuda
