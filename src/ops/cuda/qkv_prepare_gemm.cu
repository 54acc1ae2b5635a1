// The QKV GEMM with prepare_qkv_'s work in its epilogue (see qkv_prepare_gemm.h). Why: at qwen3-0.6b's
// 4096-token prefill the layer ran cuBLASLt's QKV GEMM (52 us) and then prepare_qkv (30 us), which
// reads the 33 MB product back, writes q in place and k / v into the cache: 67 MB of DRAM traffic
// a layer for work the GEMM's epilogue can do from its registers.
//
// Main loop: n256::run_tiles (gemm_n256_ring.cuh), TMA-fed, persistent; a tile is 128 rows x 256
// columns = two heads of 128 (n is a multiple of 256, so a tile never straddles a head; the two
// heads may be of different kinds where nkv is odd).
//
// Epilogue (per warp: its 16 rows x 256 columns, in two passes of 8 rows):
//  1. the warp's accumulators of rows g + 8i (wgmma layout: lane (g, t4) holds columns 8j + 2t4,
//     +1) are rounded to bf16 (where prepare_qkv_ reads the GEMM's bf16 output) and staged in the
//     warp's own 8 x 256 shared buffer (row pitch 528 bytes: the 4-byte stores hit 32 banks);
//  2. lane (row8 = lane % 8, b = lane / 8) takes row row8 and, of each head, the 16-byte chunks
//     b, b + 4, b + 8, b + 12: RoPE's partner of chunk c is chunk c ^ 8 (the other half of the
//     head), in the same lane, and one row's cos / sin serve both heads. The reads of a quarter
//     warp (one b, eight rows) hit distinct banks at that pitch.
// Bit for bit prepare_qkv_'s lanes kernels (prepare_qkv_math.cuh, cut_norm_rope_values): a chunk's
// sum of squares is its FMA chain in element order; the head's sum is that kernel's butterfly over
// 16 chunk lanes (xor 8, 4, 2, 1), which by commutativity is ((s_b + s_b+8) + (s_b+4 + s_b+12))
// summed over b as (A_0 + A_2) + (A_1 + A_3): here each lane forms its A_b and two shuffles across
// the row's four lanes (xor 8, xor 16) add them the same way; then x * inv rounded, w * x rounded,
// RoPE as x c + (partner s, its sign flipped in the low half), rounded where stored.
// Stores: 16 bytes a lane, four lanes writing 64 contiguous bytes of a row.
#include "ops/cuda/qkv_prepare_gemm.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "core/error.h"
#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gemm_n256_ring.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/prepare_qkv_math.cuh"
#include "ops/cuda/sm90a_device.h"
#include "ops/cuda/smem_mbarrier.cuh"
#include "ops/cuda/tensor_copy.cuh"
#include "ops/cuda/tensor_map.h"

namespace grt::cuda {
namespace {

constexpr int kHd = 128;
constexpr int kPitch = 528;               // bytes a staged row: 512 + 16
constexpr int kWarpStage = 8 * kPitch;    // one warp's 8 staged rows

// 128-row tiles: two warpgroups (up to 255 registers a thread: 241, no spills, with the epilogue's
// values beside the 128 accumulators; three warpgroups' 168 spilled 4 KB a thread) and a 4-stage ring.
struct QkvCfg {
  static constexpr int kGroups = 2;
  static constexpr int kStages = 4;
  using Ring = n256::Ring<kGroups, kStages>;
  static constexpr uint32_t kStaging = Ring::kBytes;  // after the ring and its barriers (16-byte aligned)
  static constexpr size_t kSmem = size_t{kStaging} + size_t{kGroups} * 4 * kWarpStage + 1024;  // + alignment slack
  static_assert(kStaging % 16 == 0, "staged rows are read 16 bytes at a time");
  static_assert(kSmem <= 227 * 1024, "ring and staging must fit an H100 block's shared memory");
};

// The epilogue's arguments (QkvGemmArgs' pointers typed, bounds 32-bit where the host checked they fit).
struct QkvEpilogue {
  __nv_bfloat16* out;
  int64_t out_stride;
  const __nv_bfloat16* q_norm;
  const __nv_bfloat16* k_norm;
  const int32_t* positions;
  const float* cos_sin;
  const int32_t* out_cache_loc;
  __nv_bfloat16* k_cache;
  __nv_bfloat16* v_cache;
  uint32_t max_positions, num_slots;
  int nq, nkv;
  float eps;
  bool prepare;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
using attn::pack2;
using tma::tma_load_2d;
using Bf16 = __nv_bfloat16;

// prepare_qkv_'s conversions (prepare_qkv_math.cuh): a 16-byte chunk to 8 floats by bit
// operations, a float pair rounded to bf16 and back, 8 floats rounded into a chunk.
__device__ __forceinline__ void unpack8(const uint4& raw, float (&x)[8]) { prep::unpack_chunk_bits<Bf16>(raw, x); }
__device__ __forceinline__ void round2(float& a, float& b) { prep::round_pair<Bf16, true>(a, b); }
__device__ __forceinline__ uint4 pack8(const float (&y)[8]) { return prep::pack_chunk<Bf16>(y); }

// One head of one row: the four chunks b, b + 4, b + 8, b + 12 (x[q] = chunk b + 4q) of this lane,
// prepared in place as prepare_qkv_'s lanes kernel prepares them (see the top of the file). The
// two shuffles run in every lane (the callers keep the warp converged). cs_c / cs_s: the cos / sin
// of the lane's low-half elements (chunks b and b + 4), used when `rope`.
__device__ __forceinline__ void prepare_head(float (&x)[4][8], const uint4 (&wraw)[4], bool norm, float eps,
                                             bool rope, const float (&cs_c)[2][8], const float (&cs_s)[2][8]) {
  float s[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    s[q] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s[q] = __fmaf_rn(x[q][j], x[q][j], s[q]);
  }
  float a = (s[0] + s[2]) + (s[1] + s[3]);           // (s_b + s_b+8) + (s_b+4 + s_b+12)
  a += __shfl_xor_sync(0xffffffffu, a, 16);          // A_b + A_b^2 (lane / 8 = b)
  const float ss = a + __shfl_xor_sync(0xffffffffu, a, 8);  // + (A_b^1 + A_b^3)
  if (norm) {
    const float inv = rsqrtf(ss / static_cast<float>(kHd) + eps);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      float w[8];
      unpack8(wraw[q], w);
#pragma unroll
      for (int j = 0; j < 8; ++j) x[q][j] = x[q][j] * inv;
#pragma unroll
      for (int j = 0; j < 8; j += 2) round2(x[q][j], x[q][j + 1]);
#pragma unroll
      for (int j = 0; j < 8; ++j) x[q][j] = w[j] * x[q][j];
#pragma unroll
      for (int j = 0; j < 8; j += 2) round2(x[q][j], x[q][j + 1]);
    }
  }
  if (rope) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {  // low chunk q, high chunk q + 2 (chunks b + 4q and b + 4q + 8)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float lo = x[q][j], hi = x[q + 2][j], c = cs_c[q][j], sn = cs_s[q][j];
        x[q][j] = __fadd_rn(__fmul_rn(lo, c), -__fmul_rn(hi, sn));
        x[q + 2][j] = __fadd_rn(__fmul_rn(hi, c), __fmul_rn(lo, sn));
      }
    }
  }
}

__global__ void __launch_bounds__(QkvCfg::Ring::kThreads, 1)
    qkv_gemm_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                    int64_t rows_total, int n, int k, const __grid_constant__ QkvEpilogue e) {
  using C = QkvCfg;
  using R = C::Ring;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (tma::smem_addr(smem_raw) & 1023)) & 1023);
  const uint32_t ring = tma::smem_addr(smem);
  const int col_tiles = n / 256;
  const int tiles = col_tiles * static_cast<int>((rows_total + R::kBM - 1) / R::kBM);
  const int kts = k / R::kBK;
  const int b0 = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const uint32_t stage_rows = ring + C::kStaging + warp * kWarpStage;
  unsigned char* const stage_ptr = smem + C::kStaging + warp * kWarpStage;
  // Slice g of this block's sequence: the tile's x rows and its 256 weight rows (two boxes of 128).
  const auto load = [&](int g, uint32_t stage, uint32_t full) {
    const int t = b0 + g / kts * grid, col = g % kts * R::kBK, n0 = t % col_tiles * 256;
    smem_mbar::mbar_arrive_expect_tx(full, R::kStageBytes);
    tma_load_2d(stage, &xmap, col, t / col_tiles * R::kBM, full);
    tma_load_2d(stage + R::kABytes, &wmap, col, n0, full);
    tma_load_2d(stage + R::kABytes + 128 * 128, &wmap, col, n0 + 128, full);
  };
  const auto epilogue = [&](int t, const float(&d)[128]) {
    const int64_t m0 = static_cast<int64_t>(t / col_tiles) * R::kBM;
    const int n0 = t % col_tiles * 256;
    // This warp's first row of the tile (warpgroup c's 64 rows, its warp's 16 of them).
    const int64_t wrow = m0 + static_cast<int>(threadIdx.x) / 128 * 64 + 16 * (warp % 4);
    const int grp = lane / 4, t4 = lane % 4, row8 = lane % 8, b = lane / 8;
    // The two heads (h = 0, 1: columns n0 + 128 h ..): kind 0 q, 1 k, 2 v; index within the kind.
    int kind[2], hidx[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int head = n0 / kHd + h;
      kind[h] = head < e.nq ? 0 : head < e.nq + e.nkv ? 1 : 2;
      hidx[h] = kind[h] == 0 ? head : kind[h] == 1 ? head - e.nq : head - e.nq - e.nkv;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int64_t r = wrow + 8 * i + row8;  // this lane's row in phase 2
      const bool valid = r < rows_total;
      int pos = -1, slot = -1;
      if (e.prepare && valid) {
        pos = e.positions[r];
        slot = e.out_cache_loc[r];
      }
      __syncwarp();  // the previous pass's reads of the staging rows are done
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const int dj = 4 * j + 2 * i;
        const uint32_t v = pack2<__nv_bfloat16>(d[dj], d[dj + 1]);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(stage_rows + grp * kPitch + (8 * j + 2 * t4) * 2), "r"(v)
                     : "memory");
      }
      __syncwarp();
      const bool rope = e.prepare && static_cast<uint32_t>(pos) < e.max_positions;
      const bool store = static_cast<uint32_t>(slot) < e.num_slots;
      float cs_c[2][8], cs_s[2][8];
      if (rope) {
        const float* row = e.cos_sin + static_cast<int64_t>(pos) * kHd;
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int j0 = (b + 4 * q) * 8;  // the low-half element of chunk b + 4q
#pragma unroll
          for (int j = 0; j < 8; j += 4) {
            const float4 cv = *reinterpret_cast<const float4*>(row + j0 + j);
            const float4 sv = *reinterpret_cast<const float4*>(row + kHd / 2 + j0 + j);
            cs_c[q][j] = cv.x, cs_c[q][j + 1] = cv.y, cs_c[q][j + 2] = cv.z, cs_c[q][j + 3] = cv.w;
            cs_s[q][j] = sv.x, cs_s[q][j + 1] = sv.y, cs_s[q][j + 2] = sv.z, cs_s[q][j + 3] = sv.w;
          }
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x[4][8];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          unpack8(*reinterpret_cast<const uint4*>(stage_ptr + row8 * kPitch + h * 256 + (b + 4 * q) * 16), x[q]);
        // The GEMM's bf16 bits as staged (unpack8 then pack8 is exact): plain output, or v into its cache.
        if (!e.prepare || kind[h] == 2) {
          __nv_bfloat16* dst = !e.prepare ? e.out + r * e.out_stride + n0 + h * kHd
                                          : e.v_cache + static_cast<int64_t>(slot) * (e.nkv * kHd) + hidx[h] * kHd;
          if (valid && (!e.prepare || store)) {
#pragma unroll
            for (int q = 0; q < 4; ++q) *reinterpret_cast<uint4*>(dst + (b + 4 * q) * 8) = pack8(x[q]);
          }
          if (!e.prepare) continue;
          // A v head still runs prepare_head's shuffles below: the tile may hold a k and a v head.
        }
        const __nv_bfloat16* nw = kind[h] == 0 ? e.q_norm : kind[h] == 1 ? e.k_norm : nullptr;
        uint4 wraw[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          wraw[q] = nw ? *reinterpret_cast<const uint4*>(nw + (b + 4 * q) * 8) : make_uint4(0, 0, 0, 0);
        prepare_head(x, wraw, nw != nullptr, e.eps, kind[h] != 2 && rope, cs_c, cs_s);
        if (kind[h] == 2 || !valid || (kind[h] == 1 && !store)) continue;
        __nv_bfloat16* dst = kind[h] == 0 ? e.out + r * e.out_stride + hidx[h] * kHd
                                          : e.k_cache + static_cast<int64_t>(slot) * (e.nkv * kHd) + hidx[h] * kHd;
#pragma unroll
        for (int q = 0; q < 4; ++q) *reinterpret_cast<uint4*>(dst + (b + 4 * q) * 8) = pack8(x[q]);
      }
    }
  };
  n256::run_tiles<C::kGroups, C::kStages, true>(ring, tiles, kts, load, epilogue);
}
#else
__global__ void qkv_gemm_kernel(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, int64_t,
                                int, int, const __grid_constant__ QkvEpilogue) {
  __trap();  // the op refuses devices without sm_90a code (sm90a_device)
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

void launch(Device d, const QkvGemmArgs& a) {
  using C = QkvCfg;
  constexpr int kBM = C::Ring::kBM;
  const int64_t tiles = (a.rows + kBM - 1) / kBM * (a.n / 256);
  int sms = 0;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.index), "reading the SM count of {}",
                 d.str());
  const CUtensorMap xmap = bf16_tensor_map("qkv_gemm x", a.x, a.rows, a.k, (a.rows > 1 ? a.x_stride : a.k) * 2,
                                          static_cast<uint32_t>(kBM));
  const CUtensorMap wmap = bf16_tensor_map("qkv_gemm w", a.w, a.n, a.k, a.k * 2, 128);
  const ops::PrepareQkvArgs& p = a.prep;
  QkvEpilogue e{};
  e.out = static_cast<__nv_bfloat16*>(a.out);
  e.out_stride = a.out_stride;
  e.prepare = a.prepare;
  e.q_norm = static_cast<const __nv_bfloat16*>(p.q_norm);
  e.k_norm = static_cast<const __nv_bfloat16*>(p.k_norm);
  e.positions = p.positions;
  e.cos_sin = p.cos_sin;
  e.out_cache_loc = p.out_cache_loc;
  e.k_cache = static_cast<__nv_bfloat16*>(p.k_cache);
  e.v_cache = static_cast<__nv_bfloat16*>(p.v_cache);
  // Bounds as unsigned 32-bit compares: for any int32 i, (uint32_t)i < bound <=> 0 <= i < bound.
  e.max_positions = static_cast<uint32_t>(std::min<int64_t>(p.max_positions, int64_t{1} << 31));
  e.num_slots = static_cast<uint32_t>(std::min<int64_t>(p.num_slots, int64_t{1} << 31));
  e.nq = static_cast<int>(p.q_heads);
  e.nkv = static_cast<int>(p.kv_heads);
  e.eps = p.eps;
  auto* kernel = qkv_gemm_kernel;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for qkv_gemm", C::kSmem);
  const int64_t blocks = std::min<int64_t>(tiles, sms);
  (void)launch_pdl(d.index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(C::Ring::kThreads), C::kSmem,
                   dense::launch_stream(d), 1, xmap, wmap, a.rows, static_cast<int>(a.n), static_cast<int>(a.k), e);
  GRT_CUDA_CHECK_LAUNCH("qkv_gemm rows={} n={} k={} prepare={}", a.rows, a.n, a.k, a.prepare);
}

}  // namespace

void qkv_gemm(Device d, const QkvGemmArgs& a) {
  if (a.rows == 0) return;
  GRT_CHECK(sm90a_device(), "qkv_gemm: needs an sm_90 GPU and sm_90a code in this build");
  GRT_CHECK(a.n % 256 == 0 && a.k % 64 == 0 && a.n <= 0x7fffffff && a.k <= 0x7fffffff &&
                (a.rows + 63) / 64 * (a.n / 256) <= 0x7fffffff,
            "qkv_gemm: [{}, {}] x K {} does not fit the kernel", a.rows, a.n, a.k);
  launch(d, a);
}

}  // namespace grt::cuda
