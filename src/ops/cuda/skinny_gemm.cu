// The skinny GEMM (see skinny_gemm.h; host rules in ops/skinny_gemm.h). Why: at 17..64 rows linear
// ran cuBLASLt, whose launches carry no PDL attribute, and at qwen3-0.6b's sizes its kernels
// stream 4-12 MB of weights at ~1.1-1.6 TB/s (plus a split-K reduce kernel for down). The
// TMA-fed decode gate_up + SwiGLU kernel (gate_up_swiglu_decode.cu) streamed 2.6 TB/s at M 64;
// this is its pipeline with a plain epilogue and split-K, so that N 1024 still covers the SMs.
//
// Shape: a block owns 64 rows (one m64 wgmma tile, rows past M zero-filled by TMA) x BN output
// columns n0.. (BN 64: one m64n64k16 wgmma a k16 step; BN 128: one m64n128k16) and the K slices
// [r * kts / S, (r + 1) * kts / S) of its split r. The S splits of a column tile form one thread
// block cluster (cluster dims (S, 1, 1), grid x = S, so the cluster rank is blockIdx.x).
// 160 threads: one consumer warpgroup and one producer warp whose lane 0 issues the bulk tensor
// copies (x box 64 x 64, weight box BN x 64, 128-byte swizzle = wg::sw128's layout) into a
// weight ring and an x ring with full / empty mbarriers (the protocol of the TMA decode kernel).
// Ring depths are launch arguments: the host sizes them so that the blocks of the grid fit one
// wave (ceil(blocks / SMs) blocks an SM), the x ring at most `x_stages` (GRAPHRT_SKINNY_GEMM_XSTAGES,
// default 3), the weight ring the rest (<= kMaxWStages), both at most the block's slice count.
// Measured (session 11, bench/results/h100_2026-11-24_s11_dgemm): correct, but slower than
// cuBLASLt at every shape (0.4-0.7 TB/s isolated on qwen3-0.6b), so linear does not route here
// by default (ops/skinny_gemm.h).
// PDL: the weights are constants of the forward, so the producer requests the first weight stages
// before griddepcontrol.wait and x after; the consumer triggers after its main loop.
//
// Split-K reduction (S > 1): after the main loop each consumer thread writes its accumulators to
// its own block's shared memory (the ring, done with: part[i * 128 + thread], conflict-free), the
// cluster synchronises, and rank r sums accumulator slots [r * R / S, (r + 1) * R / S) (R = BN / 2
// a thread) over the S blocks' partials through distributed shared memory in rank order 0..S-1,
// rounds to bf16 once and stores; a second cluster barrier keeps every block's shared memory alive
// until the others have read it. Determinism: every output's sum order is fixed by (N, K, BN, S);
// wgmma rows are independent, so row r's bits depend on x row r and the weights only.
#include "ops/cuda/skinny_gemm.h"

#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "core/error.h"
#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gate_up_swiglu_decode.h"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/sm90a_device.h"
#include "ops/cuda/smem_mbarrier.cuh"
#include "ops/cuda/tensor_copy.cuh"
#include "ops/cuda/tensor_map.h"

namespace grt::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kBM = 64;  // rows of a tile (one m64 wgmma)
constexpr int kBK = 64;  // K slice: one 128-byte swizzle span, one tensor-map box width
constexpr int kThreads = 160;  // one consumer warpgroup + one producer warp
constexpr uint32_t kXBytes = kBM * kBK * 2;  // 8 KB: the x rows of a slice
constexpr int kMaxWStages = 8;
constexpr int kMaxXStages = 8;
static_assert(kBK == static_cast<int>(kTensorMapBoxCols), "a tensor-map box spans one K slice");

template <int BN>
struct Cfg {
  static constexpr uint32_t kWBytes = BN * kBK * 2;  // 8 / 16 KB: the weight rows of a slice
  static constexpr int kRegs = BN / 2;               // accumulators a consumer thread (64 x BN / 128)
  static constexpr uint32_t kPartialBytes = 128 * kRegs * 4;
  static constexpr int kMinBlocks = BN == 128 ? 2 : 3;  // blocks an SM (launch bounds; ops/skinny_gemm.cpp's rule)
};
static_assert(Cfg<64>::kWBytes % 1024 == 0 && kXBytes % 1024 == 0, "swizzle atoms are 1024-byte aligned");

// Shared-memory offsets (from the 1024-aligned base) of a launch's rings and barriers: the weight
// ring, the x ring, then (past the larger of the rings and the split-K partials, which reuse the
// rings) wfull[ws], wempty[ws], xfull[xs], xempty[xs].
struct Layout {
  uint32_t xring, wfull, wempty, xfull, xempty, end;
  __host__ __device__ Layout(uint32_t wbytes, uint32_t partial_bytes, int ws, int xs) {
    xring = ws * wbytes;
    const uint32_t rings = xring + xs * kXBytes;
    wfull = rings > partial_bytes ? rings : partial_bytes;
    wempty = wfull + 8 * ws;
    xfull = wempty + 8 * ws;
    xempty = xfull + 8 * xs;
    end = xempty + 8 * xs;
  }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
using attn::pack2;
using wg::sw128_desc;
using wg::wgmma_commit;
using wg::wgmma_fence;
using wg::wgmma_wait;

// Stores the output pair of accumulator slots (i, i + 1) (i even) of this consumer thread: slot i
// of an m64nBN accumulator is row 16 warp + lane / 4 (+ 8 for i % 4 >= 2), column 64 (i / 32) +
// 8 ((i % 32) / 4) + 2 (lane % 4) (+ 1 for slot i + 1). Rows at or past `rows` are not stored.
__device__ __forceinline__ void store_pair(__nv_bfloat16* out, int64_t n, int rows, int n0, int i, float v0,
                                           float v1) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int e = i % 32;
  const int r = 16 * warp + lane / 4 + 8 * ((e % 4) / 2);
  if (r >= rows) return;
  const int64_t c = n0 + 64 * (i / 32) + 8 * (e / 4) + 2 * (lane % 4);
  *reinterpret_cast<uint32_t*>(out + r * n + c) = pack2<__nv_bfloat16>(v0, v1);
}

// The consumer warpgroup's main loop over the block's q slices: wait for the x and weight stages,
// 4 k16 wgmma steps, then release both stages once the wgmma completed.
template <int BN>
__device__ __forceinline__ void consume(uint32_t ring, const Layout& L, int q, int ws, int xs, float (&d0)[32],
                                        float (&d1)[32]) {
  using C = Cfg<BN>;
#pragma unroll 1
  for (int c = 0; c < q; ++c) {
    const int sw = c % ws, sx = c % xs;
    smem_mbar::mbar_wait(ring + L.xfull + 8 * sx, static_cast<uint32_t>(c / xs) & 1u);
    smem_mbar::mbar_wait(ring + L.wfull + 8 * sw, static_cast<uint32_t>(c / ws) & 1u);
    const uint32_t a = ring + L.xring + sx * kXBytes;
    const uint32_t b = ring + sw * C::kWBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const int acc = c > 0 || kk > 0;
      if constexpr (BN == 64) wg::wgmma_ss<__nv_bfloat16>(d0, sw128_desc(a + kk * 32), sw128_desc(b + kk * 32), acc);
      else wg::wgmma_ss128<__nv_bfloat16>(d0, d1, sw128_desc(a + kk * 32), sw128_desc(b + kk * 32), acc);
    }
    wgmma_commit();
    wgmma_wait<0>();
    smem_mbar::mbar_arrive(ring + L.xempty + 8 * sx);
    smem_mbar::mbar_arrive(ring + L.wempty + 8 * sw);
  }
}

// The producer's copies of K slice kt into stage s: the weight tile (rows n0 .. n0 + BN - 1) or
// the x tile (rows m0 .., zeros past the map's rows), each announced on its "full" barrier.
template <int BN>
__device__ __forceinline__ void load_w(uint32_t ring, const Layout& L, const CUtensorMap* wmap, int kt, int s, int n0) {
  const uint32_t full = ring + L.wfull + 8 * s;
  smem_mbar::mbar_arrive_expect_tx(full, Cfg<BN>::kWBytes);
  tma::tma_load_2d(ring + s * Cfg<BN>::kWBytes, wmap, kt * kBK, n0, full);
}
__device__ __forceinline__ void load_x(uint32_t ring, const Layout& L, const CUtensorMap* xmap, int kt, int s, int m0) {
  const uint32_t full = ring + L.xfull + 8 * s;
  smem_mbar::mbar_arrive_expect_tx(full, kXBytes);
  tma::tma_load_2d(ring + L.xring + s * kXBytes, xmap, kt * kBK, m0, full);
}

// Accumulator slot i of the m64nBN tile (d0: slots 0-31, d1: 32-63).
__device__ __forceinline__ float slot(const float (&d0)[32], const float (&d1)[32], int i) {
  return i < 32 ? d0[i & 31] : d1[i & 31];
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: x over the SPLIT K splits (one cluster), y over the n / BN column tiles, z over the
// 64-row tiles. kts: K / 64 slices in all; ws / xs: the ring depths (host-chosen, >= 1).
template <int BN, int SPLIT>
__global__ void __launch_bounds__(kThreads, Cfg<BN>::kMinBlocks)
    skinny_gemm_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                       __nv_bfloat16* out, int rows_total, int64_t n, int kts, int ws, int xs) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = Cfg<BN>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = tma::smem_addr(smem_raw);
  const uint32_t pad = (1024 - (raw & 1023)) & 1023;
  const uint32_t ring = raw + pad;
  const Layout L(C::kWBytes, C::kPartialBytes, ws, xs);
  const int r = static_cast<int>(blockIdx.x);  // the split = the cluster rank (cluster dims (split, 1, 1))
  const int n0 = static_cast<int>(blockIdx.y) * BN;
  const int m0 = static_cast<int>(blockIdx.z) * kBM;
  const int kt0 = r * kts / SPLIT;
  const int q = (r + 1) * kts / SPLIT - kt0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < ws; ++s) {
      smem_mbar::mbar_init(ring + L.wfull + 8 * s, 1);     // the producer's expect_tx (and the bytes)
      smem_mbar::mbar_init(ring + L.wempty + 8 * s, 128);  // the consumer's threads
    }
    for (int s = 0; s < xs; ++s) {
      smem_mbar::mbar_init(ring + L.xfull + 8 * s, 1);
      smem_mbar::mbar_init(ring + L.xempty + 8 * s, 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // seen by the TMA unit
  }
  __syncthreads();
  float d0[32], d1[32];  // the m64nBN accumulator: columns 0-63, then 64-127 (BN 128)
  if (threadIdx.x >= 128) {
    const bool issues = threadIdx.x == 128;
    const int wpre = min(ws, q), xpre = min(xs, q);
    // The weights are no kernel's output (pdl.cuh rule 1): the first stages go out before the
    // wait, while the kernel before this one finishes.
    if (issues) {
      for (int c = 0; c < wpre; ++c) load_w<BN>(ring, L, &wmap, kt0 + c, c % ws, n0);
    }
    pdl_wait();  // x is the predecessor's output
    if (issues) {
      for (int c = 0; c < xpre; ++c) load_x(ring, L, &xmap, kt0 + c, c % xs, m0);
      // Slice c's stages come back once the consumer has multiplied it: then x slice c + xs and
      // weight slice c + ws go into them.
#pragma unroll 1
      for (int c = 0; c < q; ++c) {
        const int jx = c + xs, jw = c + ws;
        if (jx < q) {
          smem_mbar::mbar_wait(ring + L.xempty + 8 * (jx % xs), (static_cast<uint32_t>(jx / xs) & 1u) ^ 1u);
          load_x(ring, L, &xmap, kt0 + jx, jx % xs, m0);
        }
        if (jw < q) {
          smem_mbar::mbar_wait(ring + L.wempty + 8 * (jw % ws), (static_cast<uint32_t>(jw / ws) & 1u) ^ 1u);
          load_w<BN>(ring, L, &wmap, kt0 + jw, jw % ws, n0);
        }
      }
    }
    pdl_trigger();
  } else {
    pdl_wait();  // reads nothing before it; waits so the contract's "every thread waits" holds
    consume<BN>(ring, L, q, ws, xs, d0, d1);
    pdl_trigger();  // the rest is the epilogue: the next kernel may start its launch
  }
  const int rows = min(kBM, rows_total - m0);
  __nv_bfloat16* o = out + static_cast<int64_t>(m0) * n;
  if constexpr (SPLIT == 1) {
    if (threadIdx.x < 128) {
#pragma unroll
      for (int i = 0; i < C::kRegs; i += 2) store_pair(o, n, rows, n0, i, slot(d0, d1, i), slot(d0, d1, i + 1));
    }
  } else {
    cg::cluster_group cluster = cg::this_cluster();
    float* part = reinterpret_cast<float*>(smem_raw + pad);
    if (threadIdx.x < 128) {
      // Every warp of the warpgroup is past its last wgmma (which read the ring) before any writes it.
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
#pragma unroll
      for (int i = 0; i < C::kRegs; ++i) part[i * 128 + threadIdx.x] = slot(d0, d1, i);
    }
    cluster.sync();  // every block's partials are in its shared memory
    if (threadIdx.x < 128) {
      // This rank's kPer slots from every rank: all loads first (one DSMEM latency, not SPLIT of
      // them in a chain), then the sums in rank order.
      constexpr int kPer = C::kRegs / SPLIT;
      float v[SPLIT][kPer];
#pragma unroll
      for (int q = 0; q < SPLIT; ++q) {
        const float* p = cluster.map_shared_rank(part, static_cast<unsigned>(q));
#pragma unroll
        for (int t = 0; t < kPer; ++t) v[q][t] = p[(r * kPer + t) * 128 + threadIdx.x];
      }
#pragma unroll
      for (int t = 0; t < kPer; t += 2) {
        float s0 = v[0][t], s1 = v[0][t + 1];
#pragma unroll
        for (int q = 1; q < SPLIT; ++q) {
          s0 += v[q][t];
          s1 += v[q][t + 1];
        }
        store_pair(o, n, rows, n0, r * kPer + t, s0, s1);
      }
    }
    cluster.sync();  // this block's shared memory stays until the others have read it
  }
#else
  __trap();  // callers check skinny_gemm_device_ok first
#endif
}

// Blocks of the grid an SM must hold for one wave, and the ring depths that fit that many.
struct Rings {
  int ws, xs;
  size_t smem;
};
template <int BN>
Rings rings_for(int64_t blocks, int sms, int q_max, int x_max) {
  using C = Cfg<BN>;
  const int64_t per_sm = std::clamp<int64_t>((blocks + sms - 1) / std::max(sms, 1), 1, C::kMinBlocks);
  // A block may use 228 KB / blocks - 1 KB reserved (and at most 227 KB); 1 KB of slack aligns the base.
  const int64_t budget = std::min<int64_t>(227 * 1024, 228 * 1024 / per_sm - 1024) - 1024;
  Rings rg{};
  rg.xs = std::clamp(std::min(x_max, q_max), 1, kMaxXStages);
  const int64_t for_w = budget - int64_t{rg.xs} * kXBytes - 16 * (kMaxWStages + kMaxXStages);
  rg.ws = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(for_w / C::kWBytes, q_max), 1, kMaxWStages));
  rg.smem = size_t{Layout(C::kWBytes, C::kPartialBytes, rg.ws, rg.xs).end} + 1024;
  return rg;
}

template <int BN, int SPLIT>
void launch(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t n, int64_t k,
            SkinnyLaunch opt) {
  const int64_t row_tiles = (rows + kBM - 1) / kBM;
  const int kts = static_cast<int>(k / kBK);
  GRT_CHECK(row_tiles <= 65535 && n / BN <= 65535 && rows <= 0x7fffffff && n <= 0x7fffffff && k <= 0x7fffffff,
            "skinny_gemm: [{}, {}] x K {} exceeds one grid", rows, n, k);
  const CUtensorMap xmap =
      bf16_tensor_map("skinny_gemm x", x, rows, k, (rows > 1 ? x_stride : k) * 2, static_cast<uint32_t>(kBM));
  const CUtensorMap wmap = bf16_tensor_map("skinny_gemm w", w, n, k, k * 2, static_cast<uint32_t>(BN));
  const dim3 grid(static_cast<unsigned>(SPLIT), static_cast<unsigned>(n / BN), static_cast<unsigned>(row_tiles));
  const Rings rg = rings_for<BN>(int64_t{grid.x} * grid.y * grid.z, skinny_gemm_sms(d.index), (kts + SPLIT - 1) / SPLIT,
                                 opt.x_stages);
  cudaStream_t s = dense::launch_stream(d);
  GRT_CUDA_CHECK(cudaFuncSetAttribute(skinny_gemm_kernel<BN, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(rg.smem)),
                 "allowing {} bytes of shared memory for skinny_gemm (tile {} split {})", rg.smem, BN, SPLIT);
  if (opt.max_carveout)
    GRT_CUDA_CHECK(cudaFuncSetAttribute(skinny_gemm_kernel<BN, SPLIT>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        static_cast<int>(cudaSharedmemCarveoutMaxShared)),
                   "asking the largest shared-memory carveout for skinny_gemm (tile {} split {})", BN, SPLIT);
  (void)launch_pdl_clusters(d.index, skinny_gemm_kernel<BN, SPLIT>, grid, dim3(kThreads), rg.smem, s,
                            dim3(static_cast<unsigned>(SPLIT), 1, 1), xmap, wmap, static_cast<__nv_bfloat16*>(out),
                            static_cast<int>(rows), n, kts, rg.ws, rg.xs);
  GRT_CUDA_CHECK_LAUNCH("skinny_gemm rows={} n={} k={} tile {} split {} rings {}/{}", rows, n, k, BN, SPLIT, rg.ws,
                        rg.xs);
}

template <int BN>
void launch_split(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t n,
                  int64_t k, int split, SkinnyLaunch opt) {
  switch (split) {
    case 1: return launch<BN, 1>(d, x, x_stride, w, out, rows, n, k, opt);
    case 2: return launch<BN, 2>(d, x, x_stride, w, out, rows, n, k, opt);
    case 4: return launch<BN, 4>(d, x, x_stride, w, out, rows, n, k, opt);
    default: return launch<BN, 8>(d, x, x_stride, w, out, rows, n, k, opt);
  }
}

}  // namespace

bool skinny_gemm_device_ok() { return sm90a_device(); }

// The decode SwiGLU route's cached SM count is the same per-device attribute.
int skinny_gemm_sms(int index) { return gate_up_swiglu_decode_sms(index); }

void skinny_gemm(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t n,
                 int64_t k, int tile_n, int split, SkinnyLaunch opt) {
  if (rows == 0) return;
  GRT_CHECK(skinny_gemm_device_ok(), "skinny_gemm: needs an sm_90 GPU and sm_90a code in this build");
  GRT_CHECK((tile_n == 64 || tile_n == 128) && (split == 1 || split == 2 || split == 4 || split == 8) &&
                n % tile_n == 0 && k % kBK == 0 && k / kBK >= 2 * split,
            "skinny_gemm: tile {} split {} does not fit N {} K {}", tile_n, split, n, k);
  GRT_CHECK(opt.x_stages >= 1 && opt.x_stages <= kMaxXStages, "skinny_gemm: x_stages {} outside 1..{}", opt.x_stages,
            kMaxXStages);
  if (tile_n == 64) launch_split<64>(d, x, x_stride, w, out, rows, n, k, split, opt);
  else launch_split<128>(d, x, x_stride, w, out, rows, n, k, split, opt);
}

}  // namespace grt::cuda
