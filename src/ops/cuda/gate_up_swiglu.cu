// The prefill gate_up GEMM with SwiGLU in its epilogue (see gate_up_swiglu.h). Why: at qwen3-0.6b's
// 4096-token prefill a layer ran cuBLASLt's gate_up GEMM (4096 x 6144 x 1024, 72.9 us) and then
// silu_and_mul (reads 50 MB, writes 25 MB, 27.5 us, DRAM-bound); cuBLASLt has no SwiGLU epilogue.
//
// Shape: a block owns 128 rows x 128 output columns i0 .. i0 + 127, i.e. gate_up rows i0 .. and
// inter + i0 .. (256 weight rows). Three warpgroups (384 threads): warpgroup 0 is the producer,
// copying each 64-wide K slice of the x tile (128 x 64, 16 KB) and the weight tile (256 x 64,
// 32 KB) with cp.async into the 128-byte-swizzled wgmma layout of attention_wgmma.cuh, into a
// ring of kStages stages; each stage has a "full" mbarrier (the 128 producer threads arrive
// through cp.async.mbarrier.arrive.noinc when their copies have landed) and an "empty" one (the
// 256 consumer threads arrive when the wgmma reading the stage has completed). Warpgroups 1 and
// 2 each own 64 rows and run, per K slice, 4 x 2 m64n128k16 wgmma (the gate accumulator and the
// up accumulator, 64 f32 registers each), keeping one slice's wgmma group in flight. Epilogue:
// silu(gate) rounded to bf16 (as silu_and_mul does) times up, rounded to bf16, stored straight
// from the registers. setmaxnreg: producer 40 registers, consumers 232 (ptxas -v: 168 registers
// at launch, no spills, no C7513 "wgmma serialized" warning; before the producer's pointer
// stepping, 56 / 224 and 72 / 208 spilled 4-12 bytes).
//
// Rounding: the unfused path rounds the gate and up GEMM outputs to bf16 before silu_and_mul;
// here they stay f32, so results differ from it in the last bits (closer to the f32 truth).
// Deterministic: every output is one fixed sequence of wgmma over K (no split-K, no atomics), the
// same kernel eager and captured, and a row's bits do not depend on the other rows.
#include "ops/cuda/gate_up_swiglu.h"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gate_up_swiglu_common.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/sm90a_device.h"

namespace grt::cuda {
namespace {

constexpr int kBM = static_cast<int>(kSwigluTileM);
constexpr int kBN = static_cast<int>(kSwigluTileN);
constexpr int kBK = static_cast<int>(kSwigluTileK);
constexpr int kStages = 4;
constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr uint32_t kABytes = kBM * kBK * 2;       // 16 KB: x rows of the tile, one 128-byte column block
constexpr uint32_t kBBytes = 2 * kBN * kBK * 2;   // 32 KB: the gate rows, then the up rows
constexpr uint32_t kStageBytes = kABytes + kBBytes;
constexpr uint32_t kBarOffset = kStages * kStageBytes;              // full[kStages], empty[kStages]
constexpr size_t kSmem = size_t{kBarOffset} + 16 * kStages + 1024;  // + alignment slack: 197,696 bytes
static_assert(kSmem <= 227 * 1024, "the ring must fit an H100 block's shared memory");

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


// The producer: x tile, then the gate and up rows of each slice.
using Producer = swiglu_gemm::CpAsyncSliceProducer<kBM, kBN, kABytes>;
static_assert(Producer::kBK == kBK, "the producer's slice width");

// Consumer warpgroup c (0 or 1): rows 64c .. 64c + 63 of the tile.
__device__ __forceinline__ void consume(uint32_t ring, uint64_t* full, uint64_t* empty, int kts, int c, float (&g0)[32],
                                        float (&g1)[32], float (&u0)[32], float (&u1)[32]) {
#pragma unroll 1
  for (int kt = 0; kt < kts; ++kt) {
    const int s = kt % kStages;
    tma::mbar_wait(full + s, static_cast<uint32_t>(kt / kStages) & 1u);
    fence_proxy_async();  // the producer's cp.async writes (generic proxy) before wgmma's reads
    const uint32_t a = ring + s * kStageBytes + c * 64 * 128;
    const uint32_t b = ring + s * kStageBytes + kABytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const int acc = kt > 0 || kk > 0;
      const uint64_t da = sw128_desc(a + kk * 32);
      wgmma_ss128<__nv_bfloat16>(g0, g1, da, sw128_desc(b + kk * 32), acc);
      wgmma_ss128<__nv_bfloat16>(u0, u1, da, sw128_desc(b + kBN * 128 + kk * 32), acc);
    }
    wgmma_commit();
    // One slice's group stays in flight: the previous one is done, its stage goes back.
    wgmma_wait<1>();
    if (kt > 0) mbar_arrive(empty + (kt - 1) % kStages);
  }
  wgmma_wait<0>();
}

// Accumulator layout (m64n128, per warp as mma.sync m16n8): this lane holds rows g and g + 8 of
// its warp's 16, columns 8j + 2t4 (+1) of each 64-column half at [4j + 0/1] (row g), [4j + 2/3].
__device__ __forceinline__ void store_half(__nv_bfloat16* out, int64_t inter, int rows, int row0, int col0,
                                           const float (&g)[32], const float (&u)[32]) {
  const int lane = threadIdx.x % 32, grp = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = row0 + grp + 8 * i;
    if (r >= rows) continue;
    __nv_bfloat16* dst = out + static_cast<int64_t>(r) * inter + col0 + 2 * t4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int e = 4 * j + 2 * i;
      *reinterpret_cast<uint32_t*>(dst + 8 * j) = pack2<__nv_bfloat16>(swiglu(g[e], u[e]), swiglu(g[e + 1], u[e + 1]));
    }
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: x over the inter / 128 column tiles (so the blocks resident together share x rows in
// L2), y over the row tiles.
__global__ void __launch_bounds__(kThreads, 1)
    gate_up_swiglu_kernel(const __nv_bfloat16* x, int64_t xs, const __nv_bfloat16* w, __nv_bfloat16* out,
                          int64_t rows_total, int64_t inter, int64_t k) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (tma::smem_addr(smem_raw) & 1023)) & 1023);
  const uint32_t ring = tma::smem_addr(smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBarOffset);
  uint64_t* empty = full + kStages;
  const int i0 = static_cast<int>(blockIdx.x) * kBN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kBM), rows_total - m0));
  const int kts = static_cast<int>(k / kBK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tma::mbar_init(full + s, 128);   // the producer's threads, through their copies
      tma::mbar_init(empty + s, 256);  // every consumer thread
    }
  }
  __syncthreads();
  pdl_wait();  // x is the predecessor's output
  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    const Producer prod(x + m0 * xs, xs, w, k, inter, i0, rows, static_cast<int>(threadIdx.x));
#pragma unroll 1
    for (int kt = 0; kt < kts; ++kt) {
      const int s = kt % kStages;
      // A fresh barrier's phase of parity 1 counts as complete: the first pass does not wait.
      tma::mbar_wait(empty + s, (static_cast<uint32_t>(kt / kStages) & 1u) ^ 1u);
      prod.copy_x(ring + s * kStageBytes, kt);
      prod.copy_w(ring + s * kStageBytes, kt);
      cp_async_mbar_arrive(full + s);
    }
    attn::cp_async_wait<0>();
    pdl_trigger();
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = static_cast<int>(threadIdx.x) / 128 - 1;
    float g0[32], g1[32], u0[32], u1[32];
    consume(ring, full, empty, kts, c, g0, g1, u0, u1);
    pdl_trigger();  // the rest is the store: the next kernel may start its launch
    const int row0 = 64 * c + 16 * ((static_cast<int>(threadIdx.x) / 32) % 4);
    __nv_bfloat16* o = out + m0 * inter;
    store_half(o, inter, rows, row0, i0, g0, u0);
    store_half(o, inter, rows, row0, i0 + 64, g1, u1);
  }
#else
  __trap();  // gate_up_swiglu refuses devices without sm_90a code (gate_up_swiglu_device_ok)
#endif
}

}  // namespace

bool gate_up_swiglu_device_ok() { return sm90a_device(); }

void gate_up_swiglu(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t inter,
                    int64_t k) {
  if (rows == 0) return;
  GRT_CHECK(gate_up_swiglu_device_ok(), "gate_up_swiglu: needs an sm_90 GPU and sm_90a code in this build");
  const int64_t row_tiles = (rows + kBM - 1) / kBM;
  GRT_CHECK(row_tiles <= 65535 && inter / kBN <= 0x7fffffff && inter <= 0x7fffffff,
            "gate_up_swiglu: [{}, {}] exceeds one grid", rows, inter);
  cudaStream_t s = dense::launch_stream(d);
  GRT_CUDA_CHECK(cudaFuncSetAttribute(gate_up_swiglu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kSmem)),
                 "allowing {} bytes of shared memory for gate_up_swiglu", kSmem);
  dim3 grid(static_cast<unsigned>(inter / kBN), static_cast<unsigned>(row_tiles));
  (void)launch_pdl(d.index, gate_up_swiglu_kernel, grid, dim3(kThreads), kSmem, s, 1,
                   static_cast<const __nv_bfloat16*>(x), x_stride, static_cast<const __nv_bfloat16*>(w),
                   static_cast<__nv_bfloat16*>(out), rows, inter, k);
  GRT_CUDA_CHECK_LAUNCH("gate_up_swiglu rows={} inter={} k={}", rows, inter, k);
}

}  // namespace grt::cuda
