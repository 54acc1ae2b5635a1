// The gate_up + SwiGLU GEMM with 192-row tiles (see gate_up_swiglu.h). Why a second kernel: the
// 128-row one (gate_up_swiglu.cu) is bound by the L2 -> SM feed (ncu, session 10: 60% tensor
// active, 4.8 TB/s of L2 traffic at 0.0112 B per FLOP; bench/results/h100_2026-11-24_s10_swiglu).
// A 192 x 256 tile (192 rows of x, 128 gate + 128 up weight rows) moves (192 + 256) / (192 * 256)
// = 0.0091 B of operands per FLOP, 19% fewer than 128 x 256 (0.0117), at the same L2 bandwidth.
//
// Shape: 384 threads = 3 warpgroups, each owning 64 rows of the tile. No producer warpgroup: the
// tile needs 128 f32 accumulators a thread, and an SM sub-partition holding 4 warps (any 416- or
// 512-thread block) leaves each at most 128 registers, which ptxas enforces for the whole kernel
// whatever setmaxnreg says (C7602 at 512 threads). So every thread both copies and multiplies:
// per 64-wide K slice, warpgroup c copies its own 64 x rows and 5-6 of the 16 16-row passes of
// the weight tile with cp.async into the 128-byte-swizzled wgmma layout (copy_slice); a ring of 4
// stages of 56 KB, each with a "full" mbarrier (384 cp.async arrivals) and an "empty" one (384
// arrivals once a thread's warpgroup has finished the wgmma reading it: all three read the
// weight tile). Per slice a warpgroup issues 4 m64n256k16 wgmma (one instruction covers the gate
// and the up rows: they lie contiguous in the stage, so the A tile is read once per k16 step, not
// twice), keeps one slice's group in flight and copies slice it + 3 into the stage that slice
// it - 1 freed. ptxas -v: 168 registers, no spills, no C7513 / C7517 (wgmma serialised / wait
// injected) warnings.
//
// Grid: one block a tile (24 x 22 = 528 blocks = 4.0 waves of 132 SMs at qwen3-0.6b's 4096 x 1024
// -> 3072), or persistent: min(tiles, SMs) blocks, each looping over tiles b, b + grid, ...; the
// copies run 3 slices ahead over the block's whole sequence of slices, so the next tile's first
// slices load while this tile's epilogue (silu, product, stores from the registers) runs.
//
// MEASURED (H100, bench/results/h100_2026-11-24_s10_sw3): correct as far as run (graph == eager
// 94/94 with it on, row bits independent of the other rows, strided == contiguous, replay ==
// eager; the comparison with the float reference and the 128-row kernel's bits was filtered out
// of that run), but SLOW: ~30 us a tile whatever the number of busy SMs (256 .. 8192 tokens, and
// llama's K 4096), i.e. ~48% tensor active a SM, against the 128-row kernel's ~60% under a full L2
// feed. So it is not the L2 feed. Leading suspect: fence.proxy.async, which every thread runs
// before its wgmma while its own cp.async copies of the next 3 slices are in flight; if the
// fence waits for those, the copies are only ~1 slice ahead (the 128-row kernel's consumers fence
// with no copies of their own). Not default (GRAPHRT_SWIGLU_TILE=192 / 192p select it).
//
// Hence the TMA form (GRAPHRT_SWIGLU_TILE=192t, the default since its run: 106 us at 4096 x 1024 ->
// 2 x 3072 under ncu, 70% tensor active, against 120 us / 60% for the 128-row kernel, which
// confirms the fence suspicion; all *GateUpSwiglu* tests pass and graph == eager 94/94):
// thread 0 issues each slice as three bulk tensor copies (tensor maps with the 128-byte swizzle,
// made per launch through the driver's cuTensorMapEncodeTiled); they write through the async
// proxy and complete on the "full" barrier with a byte count, so no thread fences and no thread
// but thread 0 has copies of its own; everything else as above (persistent grid). ptxas -v: 160
// registers, no spills.
//
// Numerics: each output is the same sequence of k16 wgmma steps over K as in the 128-row kernel
// (one m64n256 instead of two m64n128 instructions a step), then the same epilogue
// (swiglu_gemm::swiglu). Deterministic (no split-K, no atomics, one fixed order), the same kernel
// eager and captured, and a row's bits do not depend on the other rows (padding-safe).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gate_up_swiglu.h"
#include "ops/cuda/gate_up_swiglu_common.cuh"
#include "ops/cuda/gemm_n256_ring.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/smem_mbarrier.cuh"
#include "ops/cuda/tensor_copy.cuh"
#include "ops/cuda/tensor_map.h"

namespace grt::cuda {
namespace {

constexpr int kBM = static_cast<int>(kSwigluM192TileM);
constexpr int kBN = static_cast<int>(kSwigluTileN);
constexpr int kBK = static_cast<int>(kSwigluTileK);
constexpr int kGroups = kBM / 64;  // warpgroups
constexpr int kStages = 4;
using Ring = n256::Ring<kGroups, kStages>;
constexpr int kThreads = Ring::kThreads;          // 384: 168 registers a thread
constexpr uint32_t kABytes = Ring::kABytes;       // 24 KB: x rows of the tile, one 128-byte column block
constexpr uint32_t kStageBytes = Ring::kStageBytes;  // + 32 KB: the gate rows, then the up rows
static_assert(Ring::kBM == kBM && Ring::kBK == kBK && Ring::kBBytes == 2 * kBN * kBK * 2, "the shared ring's tile");
constexpr size_t kSmem = size_t{Ring::kBytes} + 1024;  // + alignment slack: 230,464 bytes
static_assert(kSmem <= 227 * 1024, "the ring must fit an H100 block's shared memory");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWPasses = 2 * kBN / 16;  // 16-row passes of the weight tile
using attn::cp_async16;
using attn::pack2;
using swiglu_gemm::swiglu;
using tma::tma_load_2d;

// One thread's share of slice kt (64 columns of K) of tile t into the stage at `stage`
// (warpgroup c, thread lt of it): 16-byte chunk lt % 8 of rows r0 + 16 i (r0 = lt / 8): of x, the
// warpgroup's own rows 64c + r0 + 16 i (i < 4; zero-filled past rows_total); of the weight tile,
// passes p = c + 3 i < 16 (rows 16 p + r0 of the gate rows 0-127, then of the up rows). All rows
// of a thread share row r0's swizzle (16 i % 8 == 0). Everything is derived from (t, kt) and the
// thread index, so nothing of it stays live in registers between slices (the accumulators take
// 128 of the 168).
__device__ __forceinline__ void copy_slice(uint32_t stage, int t, int kt, int col_tiles, const __nv_bfloat16* x,
                                           int64_t xs, const __nv_bfloat16* w, int64_t k, int64_t inter,
                                           int64_t rows_total) {
  const int c = static_cast<int>(threadIdx.x) / 128, lt = static_cast<int>(threadIdx.x) % 128;
  const int chunk = lt % 8, r0 = lt / 8;
  const int64_t m = static_cast<int64_t>(t / col_tiles) * kBM + 64 * c + r0;  // this thread's first x row
  const int64_t col = static_cast<int64_t>(kt) * kBK + chunk * 8;
  const uint32_t dst = stage + wg::sw128(r0, chunk, 16);
  const __nv_bfloat16* xp = x + m * xs + col;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const bool ok = m + 16 * i < rows_total;
    cp_async16(dst + (64 * c + 16 * i) * 128, ok ? xp + 16 * i * xs : x, ok);  // x: an address never read
  }
  const __nv_bfloat16* wp = w + static_cast<int64_t>((t % col_tiles) * kBN + r0) * k + col;
#pragma unroll
  for (int i = 0; i < (kWPasses + kGroups - 1) / kGroups; ++i) {
    const int p = c + kGroups * i;
    if (p >= kWPasses) break;
    const int64_t row = p < kWPasses / 2 ? 16 * p : inter - kBN + 16 * p;  // gate, or up row 16 (p - 8)
    cp_async16(dst + kABytes + p * 16 * 128, wp + row * k, true);
  }
}

// This lane's rows g and g + 8 of its warp's 16 (from row0), columns col0 + 8j + 2 t4 (+1) for
// j < 16: gate d[4j + 2i (+1)], up d[64 + 4j + 2i (+1)].
__device__ __forceinline__ void store_tile(__nv_bfloat16* out, int64_t inter, int rows, int row0, int col0,
                                           const float (&d)[128]) {
  const int lane = threadIdx.x % 32, grp = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = row0 + grp + 8 * i;
    if (r >= rows) continue;
    __nv_bfloat16* dst = out + static_cast<int64_t>(r) * inter + col0 + 2 * t4;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int e = 4 * j + 2 * i;
      *reinterpret_cast<uint32_t*>(dst + 8 * j) =
          pack2<__nv_bfloat16>(swiglu(d[e], d[64 + e]), swiglu(d[e + 1], d[65 + e]));
    }
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// The main loop is n256::run_tiles (gemm_n256_ring.cuh). Block b takes tiles b, b + gridDim.x, ...
// of the inter / 128 column tiles (fastest: the blocks running together share x rows in L2) x row
// tiles: one tile a block (grid = tiles), or persistent (grid = min(tiles, SMs)). The copies run kStages - 1 slices ahead over the block's
// whole sequence of slices, so in the persistent grid the next tile's first three slices are in
// flight while this one's epilogue runs. TMA: thread 0 alone issues each slice as three bulk
// tensor copies (x tile, gate rows, up rows: 128-byte swizzle by the tensor maps xmap / wmap,
// rows past rows_total zero-filled) completing on the stage's "full" barrier with a byte count;
// they write through the async proxy, so no thread fences, and no thread has copies in flight of
// its own but thread 0, which only issues them (the cp.async form: x, xs, w; maps unused).
template <bool kTma>
__global__ void __launch_bounds__(kThreads, 1)
    gate_up_swiglu_m192_kernel(const __nv_bfloat16* x, int64_t xs, const __nv_bfloat16* w,
                               const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                               __nv_bfloat16* out, int64_t rows_total, int64_t inter, int64_t k) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (tma::smem_addr(smem_raw) & 1023)) & 1023);
  const uint32_t ring = tma::smem_addr(smem);
  const int col_tiles = static_cast<int>(inter / kBN);
  const int tiles = col_tiles * static_cast<int>((rows_total + kBM - 1) / kBM);
  const int kts = static_cast<int>(k / kBK);
  const int b0 = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  // Slice g of this block's sequence into `stage`. TMA: thread 0 only.
  const auto load = [&](int g, uint32_t stage, uint32_t full) {
    const int t = b0 + g / kts * grid;
    if constexpr (kTma) {
      const int col = g % kts * kBK, i0 = t % col_tiles * kBN;
      smem_mbar::mbar_arrive_expect_tx(full, kStageBytes);
      tma_load_2d(stage, &xmap, col, t / col_tiles * kBM, full);
      tma_load_2d(stage + kABytes, &wmap, col, i0, full);
      tma_load_2d(stage + kABytes + kBN * 128, &wmap, col, static_cast<int>(inter) + i0, full);
    } else {
      copy_slice(stage, t, g % kts, col_tiles, x, xs, w, k, inter, rows_total);
      smem_mbar::cp_async_mbar_arrive(full);
    }
  };
  const auto epilogue = [&](int t, const float(&d)[128]) {
    const int64_t m0 = static_cast<int64_t>(t / col_tiles) * kBM;
    const int rows = static_cast<int>(min(static_cast<int64_t>(kBM), rows_total - m0));
    const int row0 = static_cast<int>(threadIdx.x) / 128 * 64 + 16 * ((static_cast<int>(threadIdx.x) / 32) % 4);
    store_tile(out + m0 * inter, inter, rows, row0, (t % col_tiles) * kBN, d);
  };
  n256::run_tiles<kGroups, kStages, kTma>(ring, tiles, kts, load, epilogue);
#else
  __trap();  // gate_up_swiglu refuses devices without sm_90a code (gate_up_swiglu_device_ok)
#endif
}

}  // namespace

static_assert(kBK == static_cast<int>(kTensorMapBoxCols), "a tensor-map box spans one K slice");

void gate_up_swiglu_m192(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                         int64_t inter, int64_t k, M192Copies copies) {
  if (rows == 0) return;
  GRT_CHECK(gate_up_swiglu_device_ok(), "gate_up_swiglu_m192: needs an sm_90 GPU and sm_90a code in this build");
  const int64_t tiles = (rows + kBM - 1) / kBM * (inter / kBN);
  GRT_CHECK(tiles <= 0x7fffffff && 2 * inter <= 0x7fffffff && rows <= 0x7fffffff && k / kBK * tiles <= 0x7fffffff,
            "gate_up_swiglu_m192: [{}, {}] x K {} exceeds one grid", rows, inter, k);
  int sms = 0;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.index), "reading the SM count of {}",
                 d.str());
  const bool tma = copies == M192Copies::Tma;
  const int64_t blocks = copies == M192Copies::CpAsync ? tiles : std::min<int64_t>(tiles, sms);
  CUtensorMap xmap{}, wmap{};
  if (tma) {
    xmap = bf16_tensor_map("gate_up_swiglu_m192 x", x, rows, k, (rows > 1 ? x_stride : k) * 2,
                           static_cast<uint32_t>(kBM));
    wmap = bf16_tensor_map("gate_up_swiglu_m192 gate_up", w, 2 * inter, k, k * 2, static_cast<uint32_t>(kBN));
  }
  auto* kernel = tma ? gate_up_swiglu_m192_kernel<true> : gate_up_swiglu_m192_kernel<false>;
  cudaStream_t s = dense::launch_stream(d);
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem)),
                 "allowing {} bytes of shared memory for gate_up_swiglu_m192", kSmem);
  (void)launch_pdl(d.index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), kSmem, s, 1,
                   static_cast<const __nv_bfloat16*>(x), x_stride, static_cast<const __nv_bfloat16*>(w), xmap, wmap,
                   static_cast<__nv_bfloat16*>(out), rows, inter, k);
  GRT_CUDA_CHECK_LAUNCH("gate_up_swiglu_m192 rows={} inter={} k={} copies={}", rows, inter, k,
                        static_cast<int>(copies));
}

}  // namespace grt::cuda
