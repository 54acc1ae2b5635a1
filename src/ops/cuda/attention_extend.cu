// Paged extend (prefill) attention, causal, with a cached prefix. One block per (q tile of 64
// new tokens, q head, request); 8 warps own 8 query rows each. Key tiles of 32 positions are
// gathered through req_to_token into shared memory; a lane scores one key against its warp's 8
// rows, then the warp runs an online softmax (per-lane partial sums, one max reduction per row
// and tile) and accumulates P·V with each lane owning NP column pairs of the head.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "core/env_switch.h"
#include "device/stream.h"
#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_cuda.h"
#include "ops/cuda/attention_extend_params.h"

namespace grt::cuda {
namespace {

using namespace attn;
constexpr int kThreads = 256;
constexpr int kRowsPerWarp = 8;
constexpr int kBQ = 64;  // 8 warps x 8 rows
constexpr int kBK = 32;  // one key per lane

// Shared row pitch: odd number of 4-byte words for 2-byte types (conflict-free pair reads),
// odd number of floats for f32.
template <typename T>
int pitch(int hd) {
  return sizeof(T) == 4 ? hd + 1 : hd + 2;
}

template <typename T, int NP>
__global__ void __launch_bounds__(kThreads) extend_kernel(ExtendParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* ks = qs + kBQ * p.ld;
  T* vs = ks + kBK * p.ld;
  __shared__ int64_t slots[kBK];

  const int b = blockIdx.z, h = blockIdx.y, kvh = h / p.group;
  const int ext = min(max(p.extend_lens[b], 0), p.max_extend_len);
  const int q0 = blockIdx.x * kBQ;
  if (q0 >= ext) return;
  const int64_t prefix = max(p.prefix_lens[b], 0);
  const int64_t start = p.extend_start_loc[b];
  const int32_t req = p.req_pool_indices[b];
  const int32_t* table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
  const int rows = min(kBQ, ext - q0);
  const int half = p.hd / 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // Q tile (rows past the request or the output read as zeros).
  const T* q = static_cast<const T*>(p.q);
  for (int i = threadIdx.x; i < kBQ * half; i += kThreads) {
    const int r = i / half, c = (i % half) * 2;
    const int64_t row = start + q0 + r;
    float2 v = make_float2(0.0f, 0.0f);
    if (r < rows && row >= 0 && row < p.num_rows) v = load2(q + row * p.q_stride + static_cast<int64_t>(h) * p.hd + c);
    store2(qs + r * p.ld + c, v);
  }

  // Keys this block needs: up to the causal limit of its last row.
  const int64_t kv_end = min(prefix + q0 + rows, p.max_context);
  const int64_t width = static_cast<int64_t>(p.nkv) * p.hd;
  const T* kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * p.hd;
  const T* vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * p.hd;

  float m[kRowsPerWarp], l[kRowsPerWarp];
  float2 acc[kRowsPerWarp][NP];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int j = 0; j < NP; ++j) acc[r][j] = make_float2(0.0f, 0.0f);
  }
  const int row0 = warp * kRowsPerWarp;
  for (int64_t k0 = 0; k0 < kv_end; k0 += kBK) {
    __syncthreads();  // previous tile consumed (and the Q tile stored, first time)
    if (threadIdx.x < kBK) {
      const int64_t pos = k0 + threadIdx.x;
      slots[threadIdx.x] = pos < kv_end ? kv_slot(table, pos, p.num_slots) : -1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kBK * half; i += kThreads) {
      const int r = i / half, c = (i % half) * 2;
      const int64_t s = slots[r];
      float2 kv = make_float2(0.0f, 0.0f), vv = kv;
      if (s >= 0) {
        kv = load2(kc + s * width + c);
        vv = load2(vc + s * width + c);
      }
      store2(ks + r * p.ld + c, kv);
      store2(vs + r * p.ld + c, vv);
    }
    __syncthreads();

    // Scores: lane = key k0 + lane, against rows row0 .. row0 + 7.
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.0f;
    const T* krow = ks + lane * p.ld;
    for (int c = 0; c < p.hd; c += 2) {
      const float2 kk = load2(krow + c);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float2 qq = load2(qs + (row0 + r) * p.ld + c);
        s[r] = fmaf(qq.x, kk.x, fmaf(qq.y, kk.y, s[r]));
      }
    }
    const int64_t key = k0 + lane;
    float pr[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t qpos = prefix + q0 + row0 + r;  // causal limit of this row
      const float sc = (key <= qpos && key < kv_end) ? s[r] * p.scale_log2 : -INFINITY;
      float mt = sc;
      for (int o = 16; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
      const float mn = fmaxf(m[r], mt);
      const float mu = mn == -INFINITY ? 0.0f : mn;  // rows with nothing visible yet stay at zero
      const float alpha = exp2f(m[r] - mu);
      pr[r] = exp2f(sc - mu);
      l[r] = l[r] * alpha + pr[r];
#pragma unroll
      for (int j = 0; j < NP; ++j) acc[r][j] = make_float2(acc[r][j].x * alpha, acc[r][j].y * alpha);
      m[r] = mn;
    }
    // P·V: key j's probabilities come from lane j.
    for (int j = 0; j < kBK; ++j) {
      float2 vv[NP];
#pragma unroll
      for (int n = 0; n < NP; ++n) {
        const int c = 2 * (lane + 32 * n);
        vv[n] = c < p.hd ? load2(vs + j * p.ld + c) : make_float2(0.0f, 0.0f);
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, pr[r], j);
#pragma unroll
        for (int n = 0; n < NP; ++n) acc[r][n] = make_float2(fmaf(pj, vv[n].x, acc[r][n].x), fmaf(pj, vv[n].y, acc[r][n].y));
      }
    }
  }

  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    float lt = l[r];
    for (int o = 16; o > 0; o >>= 1) lt += __shfl_xor_sync(0xffffffffu, lt, o);
    const int qr = row0 + r;
    const int64_t row = start + q0 + qr;
    if (qr >= rows || row < 0 || row >= p.num_rows) continue;
    const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
#pragma unroll
    for (int n = 0; n < NP; ++n) {
      const int c = 2 * (lane + 32 * n);
      if (c < p.hd)
        store2(out + row * p.nq * p.hd + static_cast<int64_t>(h) * p.hd + c,
               make_float2(acc[r][n].x * inv, acc[r][n].y * inv));
    }
  }
}

template <typename T, int NP>
void launch_np(cudaStream_t st, const ExtendParams& p, dim3 grid, size_t smem) {
  auto kernel = extend_kernel<T, NP>;
  if (smem > 48 * 1024)
    GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
                   "allowing {} bytes of shared memory for attention_extend (head_dim {})", smem, p.hd);
  kernel<<<grid, kThreads, smem, st>>>(p);
}

template <typename T>
void launch_extend(cudaStream_t st, ExtendParams p, dim3 grid) {
  p.ld = pitch<T>(p.hd);
  const size_t smem = static_cast<size_t>(kBQ + 2 * kBK) * p.ld * sizeof(T);
  if (p.hd <= 64) launch_np<T, 1>(st, p, grid, smem);
  else if (p.hd <= 128) launch_np<T, 2>(st, p, grid, smem);
  else launch_np<T, 4>(st, p, grid, smem);
}

// Whether FA2 blocks of `q_tile` rows, each running a pair of q tiles, fill >= 90% of two blocks
// per multiprocessor.
bool pairs_fill_gpu(const ExtendParams& p, int q_tile) {
  const int64_t blocks = int64_t{((p.max_extend_len + q_tile - 1) / q_tile + 1) / 2} * p.nq * p.num_reqs;
  return blocks * 10 >= int64_t{2} * extend_multiprocessors() * 9;
}

// Blocks of the wgmma kernel's grid (128-row q tiles, pairs where fa2_pair_q_tiles says so).
int64_t wgmma_blocks(const ExtendParams& p) {
  const int64_t tiles = (p.max_extend_len + 127) / 128;
  return (fa2_pair_q_tiles(p, 128) ? (tiles + 1) / 2 : tiles) * p.nq * p.num_reqs;
}

bool tc_supports(const ExtendParams& p, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::F16) return false;
  if (p.hd != 64 && p.hd != 128) return false;
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return aligned(p.q) && aligned(p.k_cache) && aligned(p.v_cache) && (p.q_stride * 2) % 16 == 0;
}

}  // namespace

int extend_multiprocessors() {
  static std::atomic<int> cached[64] = {};
  int dev = 0;
  GRT_CUDA_CHECK(cudaGetDevice(&dev), "reading the current device for attention_extend");
  int n = dev >= 0 && dev < 64 ? cached[dev].load(std::memory_order_relaxed) : 0;
  if (n > 0) return n;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev),
                 "reading the multiprocessor count of device {}", dev);
  if (dev >= 0 && dev < 64) cached[dev].store(n, std::memory_order_relaxed);
  return n;
}

bool fa2_pair_q_tiles(const ExtendParams& p, int q_tile) {
  if (const char* env = std::getenv("GRAPHRT_EXTEND_PAIRING"); env != nullptr && *env != 0) {
    const std::string v = env;
    GRT_CHECK(v == "0" || v == "1", "GRAPHRT_EXTEND_PAIRING='{}' must be 0 or 1", v);
    return v == "1";
  }
  return pairs_fill_gpu(p, q_tile);
}

const char* extend_kernel_name(ExtendKernel k) {
  switch (k) {
    case ExtendKernel::kFa2Q64: return "fa2-q64";
    case ExtendKernel::kFa2Q128: return "fa2-q128";
    case ExtendKernel::kFa2Q128W4: return "fa2-q128w4";
    case ExtendKernel::kFa2V2Q64: return "fa2-v2q64";
    case ExtendKernel::kFa2V2: return "fa2-v2";
    case ExtendKernel::kFa2V2K64: return "fa2-v2k64";
    case ExtendKernel::kFa2V2Exp: return "fa2-v2e";
    case ExtendKernel::kWgmma: return "fa3-wg";
    case ExtendKernel::kWgmma2: return "fa3-wg2";
    case ExtendKernel::kWgmmaOv: return "fa3-ov";
    case ExtendKernel::kWgmmaOv64: return "fa3-ov64";
    case ExtendKernel::kWgmmaOvQ: return "fa3-ovq";
    case ExtendKernel::kWgmmaWs: return "fa3-ws";
    case ExtendKernel::kWgmmaWsP: return "fa3-wsp";
    case ExtendKernel::kWgmmaWsN: return "fa3-wsn";
    case ExtendKernel::kWgmmaWsNP: return "fa3-wsnp";
    case ExtendKernel::kWgmmaWs128: return "fa3-ws128";
    case ExtendKernel::kWgmmaWs128P: return "fa3-ws128p";
    case ExtendKernel::kWgmmaWs128N: return "fa3-ws128n";
    case ExtendKernel::kWgmmaWs128S: return "fa3-ws128s";
    case ExtendKernel::kWgmmaWs128NS: return "fa3-ws128ns";
    case ExtendKernel::kWgmmaWs128NSQ: return "fa3-ws128nsq";
    case ExtendKernel::kWgmmaWs128NSK: return "fa3-ws128nsk";
    case ExtendKernel::kWgmmaWs128NSO: return "fa3-ws128nso";
    case ExtendKernel::kWgmmaWs128NS2: return "fa3-ws128ns2";
    case ExtendKernel::kWgmmaWsNH: return "fa3-wsnh";
    case ExtendKernel::kWgmmaWsNSH: return "fa3-wsnsh";
    case ExtendKernel::kWgmmaWsNPH: return "fa3-wsnph";
    case ExtendKernel::kWgmmaWsN64: return "fa3-wsn64";
    case ExtendKernel::kTensorCore: return "tc";
    case ExtendKernel::kSimt: return "simt";
  }
  return "?";
}

namespace {

bool is_fa2(ExtendKernel k) {
  return k == ExtendKernel::kFa2Q64 || k == ExtendKernel::kFa2Q128 || k == ExtendKernel::kFa2Q128W4 ||
         k == ExtendKernel::kFa2V2Q64 || k == ExtendKernel::kFa2V2 || k == ExtendKernel::kFa2V2K64 ||
         k == ExtendKernel::kFa2V2Exp;
}

Fa2Tile fa2_tile_of(ExtendKernel k) {
  switch (k) {
    case ExtendKernel::kFa2Q64: return Fa2Tile::kQ64;
    case ExtendKernel::kFa2Q128: return Fa2Tile::kQ128;
    case ExtendKernel::kFa2Q128W4: return Fa2Tile::kQ128W4;
    case ExtendKernel::kFa2V2Q64: return Fa2Tile::kV2Q64;
    case ExtendKernel::kFa2V2: return Fa2Tile::kV2;
    case ExtendKernel::kFa2V2K64: return Fa2Tile::kV2K64;
    case ExtendKernel::kFa2V2Exp: return Fa2Tile::kV2Exp;
    default: break;
  }
  GRT_FAIL("attention_extend: {} is no FA2 kernel", extend_kernel_name(k));
}

bool is_wgmma(ExtendKernel k) {
  return k == ExtendKernel::kWgmma || k == ExtendKernel::kWgmma2 || k == ExtendKernel::kWgmmaOv ||
         k == ExtendKernel::kWgmmaOv64 || k == ExtendKernel::kWgmmaOvQ || k == ExtendKernel::kWgmmaWs ||
         k == ExtendKernel::kWgmmaWsP || k == ExtendKernel::kWgmmaWsN || k == ExtendKernel::kWgmmaWsNP ||
         k == ExtendKernel::kWgmmaWs128 || k == ExtendKernel::kWgmmaWs128P || k == ExtendKernel::kWgmmaWs128N ||
         k == ExtendKernel::kWgmmaWs128S || k == ExtendKernel::kWgmmaWs128NS || k == ExtendKernel::kWgmmaWs128NSQ ||
         k == ExtendKernel::kWgmmaWs128NSK || k == ExtendKernel::kWgmmaWs128NSO ||
         k == ExtendKernel::kWgmmaWs128NS2 || k == ExtendKernel::kWgmmaWsNH || k == ExtendKernel::kWgmmaWsNSH ||
         k == ExtendKernel::kWgmmaWsNPH || k == ExtendKernel::kWgmmaWsN64;
}

WgVariant wg_variant_of(ExtendKernel k) {
  switch (k) {
    case ExtendKernel::kWgmma: return WgVariant::kWg;
    case ExtendKernel::kWgmma2: return WgVariant::kWg2;
    case ExtendKernel::kWgmmaOv: return WgVariant::kOv;
    case ExtendKernel::kWgmmaOv64: return WgVariant::kOv64;
    case ExtendKernel::kWgmmaOvQ: return WgVariant::kOvQ;
    case ExtendKernel::kWgmmaWs: return WgVariant::kWs;
    case ExtendKernel::kWgmmaWsP: return WgVariant::kWsP;
    case ExtendKernel::kWgmmaWsN: return WgVariant::kWsN;
    case ExtendKernel::kWgmmaWsNP: return WgVariant::kWsNP;
    case ExtendKernel::kWgmmaWs128: return WgVariant::kWs128;
    case ExtendKernel::kWgmmaWs128P: return WgVariant::kWs128P;
    case ExtendKernel::kWgmmaWs128N: return WgVariant::kWs128N;
    case ExtendKernel::kWgmmaWs128S: return WgVariant::kWs128S;
    case ExtendKernel::kWgmmaWs128NS: return WgVariant::kWs128NS;
    case ExtendKernel::kWgmmaWs128NSQ: return WgVariant::kWs128NSQ;
    case ExtendKernel::kWgmmaWs128NSK: return WgVariant::kWs128NSK;
    case ExtendKernel::kWgmmaWs128NSO: return WgVariant::kWs128NSO;
    case ExtendKernel::kWgmmaWs128NS2: return WgVariant::kWs128NS2;
    case ExtendKernel::kWgmmaWsNH: return WgVariant::kWsNH;
    case ExtendKernel::kWgmmaWsNSH: return WgVariant::kWsNSH;
    case ExtendKernel::kWgmmaWsNPH: return WgVariant::kWsNPH;
    case ExtendKernel::kWgmmaWsN64: return WgVariant::kWsN64;
    default: break;
  }
  GRT_FAIL("attention_extend: {} is no wgmma kernel", extend_kernel_name(k));
}

}  // namespace

ExtendKernel choose_extend_kernel(const ExtendParams& p, DType dtype) {
  const char* env = std::getenv("GRAPHRT_EXTEND_KERNEL");
  const std::string forced = env ? env : "";
  const bool v1 = forced == "auto-v1", fa2_only = forced == "auto-fa2", s4 = forced == "auto-s4",
             s5 = forced == "auto-s5", s7 = forced == "auto-s7", s8 = forced == "auto-s8", s9a = forced == "auto-s9a";
  const bool s11 = forced == "auto-s11", s12w = forced == "auto-s12w", s12n = forced == "auto-s12n";
  const bool current = forced.empty() || forced == "auto";
  if (forced.empty() || forced == "auto" || v1 || fa2_only || s4 || s5 || s7 || s8 || s9a || s11 || s12w || s12n) {
    // Measured on an H100 (bench/results/h100_2026-11-23_s4_fa2): the wgmma kernel wins from
    // 1k tokens up (345 vs 261 TFLOP/s at 4k, 16/8/128), with registers for 2 blocks per
    // multiprocessor where its grid has more blocks than multiprocessors, else for 1 (no spills:
    // each block has a multiprocessor to itself). Elsewhere FA2: 128-row tiles of 4 warps x 32
    // rows read half the shared memory per FLOP and win wherever their blocks (a pair of q tiles
    // each, two per multiprocessor) fill >= 90% of the GPU; else 64-row tiles.
    // "auto-v1" keeps the session-3 choice, "auto-fa2" the FA2 choice on any GPU, "auto-s4" the
    // session-4 choice (fa3-wg2 / fa3-wg), for A/B.
    // Session 5 (measured, bench/results/h100_2026-11-23_s5_fa3): by the 128-row grid's blocks B
    // (pairs counted once) against the multiprocessors M. B <= M/2: fa3-ov64 (twice the blocks;
    // 91 vs 71 TFLOP/s at 256 tokens after a 4k prefix, 16/8/128). M/2 < B <= M: fa3-ov (its
    // softmax overlapped with its GEMMs; 297 vs 234 at 1k tokens after a 4k prefix). B > M:
    // fa3-wg2 at head_dim 128 (two blocks per multiprocessor beat one overlapped block: 335 vs
    // 298 at 4k), fa3-ov at head_dim 64 (128 registers: two overlapped blocks fit; 344 vs 316).
    // "auto-s5" keeps that choice for A/B.
    // Session 6 (measured, bench/results/h100_2026-11-24_s6_fa3ws): the warp-specialised kernels
    // win every point with B > M/2 at head_dim 128 (16/8/128 causal: 4k 335 -> 399, 8k 366 ->
    // 450, 16k 392 -> 490; 1k after a 4k prefix 284 -> 396). M/2 < B <= M: fa3-wsnp (pingpong,
    // m64n128 O; within 2.5% of the best variant at every point there, +29-40% over fa3-ov, at
    // head_dim 64 too). B > M: fa3-ws at head_dim 128 (+11-39% over fa3-wg2; the best variant at
    // 10 of 18 points, within 9% at all), fa3-ov at head_dim 64 (ahead of every ws variant from
    // 4k tokens: 303 vs 295).
    // B <= M/2 stays on fa3-ov64 (not compared in that run). "auto-s7" keeps that choice (sessions
    // 6 and 7) for A/B.
    // Session 8 (measured, bench/results/h100_2026-11-24_s8_attn): B > M: fa3-ws128s at head_dim
    // 128 (128-key stages on a persistent longest-first grid; ahead of fa3-ws at all 14 points,
    // 16/8/128 4k 390 -> 414, 8k 437 -> 471; qwen3-0.6b prefill 4096 -0.45 ms; the best at 10 of
    // 14 points, within 6% at all), fa3-ws128p at 64 (128-key stages, pingpong; +14-20% over
    // fa3-ov at all 6 points). M/2 < B <= M: fa3-ws128p at head_dim 64 (+8% / +19% over fa3-wsnp);
    // fa3-wsnp stays at 128 (fa3-ws128p +4.5% without a prefix, -5% after a 4k one).
    // Session 9 (measured, bench/results/h100_2026-11-24_s9_attn): B > M at head_dim 128:
    // fa3-ws128ns (fa3-ws128s with m64n128 O GEMMs; ahead of fa3-ws128s at all 10 points of that
    // bucket, +2.7 to +13%, 16/8/128 4k 416 -> 433; qwen3-0.6b prefill 4096 -0.15 ms piecewise;
    // same bits as fa3-ws128n). "auto-s8" keeps session 8's choice (fa3-ws128s there) for A/B,
    // "auto-s9a" the choice after helper s9-attn's run (fa3-ws128ns there).
    // Session 12 (measured, bench/results/h100_2026-11-24_s12_xattn): B <= M/2 (short extends) at
    // head_dim 128: fa3-wsn64 (fa3-wsn with one consumer on 64-row q tiles: fa3-ov64's block count
    // with the warp-specialised loop). qwen3-0.6b piecewise prefill 64 / 128 / 256 / 512 tokens
    // 1.499 / 1.635 / 1.883 / 2.355 -> 1.466 / 1.535 / 1.736 / 2.121 ms (fa3-wsnp there: 1.470 /
    // 1.572 / 1.778 / 2.194). The lead's closing run (bench/results/h100_2026-11-24_session12,
    // bench attention --queued, 64..512 tokens after prefixes 0 / 1024 / 4096, 16/8 heads) has it
    // the fastest at every such point at head_dim 128 (0.62-0.81 of fa3-ov64's time) and at 64
    // (0.70-0.91), so both head dims take it. "auto-s11" keeps fa3-ov64 at both head dims (sessions 5-11) for A/B;
    // "auto-s12w" runs what M/2 < B <= M runs (fa3-wsnp at 128, fa3-ws128p at 64); "auto-s12n"
    // fa3-wsn64 at both head dims.
    if (fa2_supports(p, dtype)) {
      const bool big = pairs_fill_gpu(p, 128);
      if (v1) return big ? ExtendKernel::kFa2Q128W4 : ExtendKernel::kFa2Q64;
      if (!fa2_only && wgmma_supports(p, dtype)) {
        const int64_t blocks = wgmma_blocks(p), sms = extend_multiprocessors();
        if (s4) return blocks > sms ? ExtendKernel::kWgmma2 : ExtendKernel::kWgmma;
        if (2 * blocks <= sms) {
          if (s12n || current) return ExtendKernel::kWgmmaWsN64;
          if (!s12w) return ExtendKernel::kWgmmaOv64;
        }
        if (s5) return blocks > sms && p.hd == 128 ? ExtendKernel::kWgmma2 : ExtendKernel::kWgmmaOv;
        if (s7) {
          if (blocks <= sms) return ExtendKernel::kWgmmaWsNP;
          return p.hd == 128 ? ExtendKernel::kWgmmaWs : ExtendKernel::kWgmmaOv;
        }
        if (p.hd != 128) return ExtendKernel::kWgmmaWs128P;
        if (blocks <= sms) return ExtendKernel::kWgmmaWsNP;
        if (s8) return ExtendKernel::kWgmmaWs128S;
        if (s9a) return ExtendKernel::kWgmmaWs128NS;
        return ExtendKernel::kWgmmaWs128NS;
      }
      return big ? ExtendKernel::kFa2V2 : ExtendKernel::kFa2V2Q64;
    }
    if (tc_supports(p, dtype)) return ExtendKernel::kTensorCore;
    return ExtendKernel::kSimt;
  }
  for (ExtendKernel k :
       {ExtendKernel::kFa2Q64, ExtendKernel::kFa2Q128, ExtendKernel::kFa2Q128W4, ExtendKernel::kFa2V2Q64,
        ExtendKernel::kFa2V2, ExtendKernel::kFa2V2K64, ExtendKernel::kFa2V2Exp, ExtendKernel::kWgmma,
        ExtendKernel::kWgmma2, ExtendKernel::kWgmmaOv, ExtendKernel::kWgmmaOv64, ExtendKernel::kWgmmaOvQ,
        ExtendKernel::kWgmmaWs, ExtendKernel::kWgmmaWsP, ExtendKernel::kWgmmaWsN, ExtendKernel::kWgmmaWsNP,
        ExtendKernel::kWgmmaWs128, ExtendKernel::kWgmmaWs128P, ExtendKernel::kWgmmaWs128N, ExtendKernel::kWgmmaWs128S,
        ExtendKernel::kWgmmaWs128NS, ExtendKernel::kWgmmaWs128NSQ, ExtendKernel::kWgmmaWs128NSK,
        ExtendKernel::kWgmmaWs128NSO, ExtendKernel::kWgmmaWs128NS2, ExtendKernel::kWgmmaWsNH,
        ExtendKernel::kWgmmaWsNSH, ExtendKernel::kWgmmaWsNPH, ExtendKernel::kWgmmaWsN64, ExtendKernel::kTensorCore,
        ExtendKernel::kSimt}) {
    if (forced != extend_kernel_name(k)) continue;
    bool ok = fa2_supports(p, dtype);
    if (k == ExtendKernel::kSimt) ok = true;
    else if (k == ExtendKernel::kTensorCore) ok = tc_supports(p, dtype);
    else if (is_wgmma(k)) ok = wgmma_supports(p, dtype);
    GRT_CHECK(ok, "GRAPHRT_EXTEND_KERNEL={}: that kernel does not serve dtype {} head_dim {} (or unaligned rows)",
              forced, dtype_name(dtype), p.hd);
    return k;
  }
  GRT_FAIL(
      "GRAPHRT_EXTEND_KERNEL='{}' is not one of auto, auto-v1, auto-fa2, auto-s4, auto-s5, auto-s7, auto-s8, auto-s9a, "
      "auto-s11, auto-s12w, auto-s12n, "
      "fa2-q64, "
      "fa2-q128, fa2-q128w4, fa2-v2q64, fa2-v2, fa2-v2k64, fa2-v2e, fa3-wg, fa3-wg2, fa3-ov, fa3-ov64, fa3-ovq, fa3-ws, "
      "fa3-wsp, fa3-wsn, fa3-wsnp, fa3-ws128, fa3-ws128p, fa3-ws128n, fa3-ws128s, fa3-ws128ns, fa3-ws128nsq, fa3-ws128nsk, "
      "fa3-ws128nso, fa3-ws128ns2, fa3-wsnh, fa3-wsnsh, fa3-wsnph, fa3-wsn64, tc, simt",
      forced);
}

namespace {

int prepare_q_override = -1;  // set_extend_prepare_q: -1 the environment

bool prepare_q_on() {
  static const int mode = env_choice("GRAPHRT_EXTEND_PREPARE_Q", {"0", "auto"}, 1);
  return (prepare_q_override >= 0 ? prepare_q_override : mode) == 1;
}

// The q part of prepare_qkv_ in p's fields (ExtendParams::prepare_q).
void set_prepare_q(ExtendParams& p, const ops::PrepareQkvArgs& q) {
  p.prepare_q = true;
  p.q_norm = q.q_norm;
  p.q_eps = q.eps;
  p.positions = q.positions;
  p.cos_sin = q.cos_sin;
  p.max_positions = q.max_positions;
}

ExtendParams extend_params(const ops::ExtendArgs& e) {
  const ops::PagedAttentionArgs& a = e.a;
  GRT_CHECK(a.dtype == DType::BF16 || a.dtype == DType::F16 || a.dtype == DType::F32,
            "attention_extend on CUDA: dtype {} not supported", dtype_name(a.dtype));
  GRT_CHECK(a.head_dim % 2 == 0 && a.head_dim <= 256, "attention_extend on CUDA: head_dim {} must be even, <= 256",
            a.head_dim);
  GRT_CHECK(e.num_reqs <= 65535, "attention_extend on CUDA: {} requests exceed the grid limit", e.num_reqs);
  ExtendParams p{};
  p.q = a.q;
  p.q_stride = a.q_row_stride;
  p.k_cache = a.k_cache;
  p.v_cache = a.v_cache;
  p.num_slots = a.num_slots;
  p.max_reqs = a.max_reqs;
  p.max_context = a.max_context;
  p.num_rows = e.num_rows;
  p.req_to_token = a.req_to_token;
  p.req_pool_indices = a.req_pool_indices;
  p.prefix_lens = e.prefix_lens;
  p.extend_lens = e.extend_lens;
  p.extend_start_loc = e.extend_start_loc;
  p.out = a.out;
  p.nq = a.num_q_heads;
  p.nkv = a.num_kv_heads;
  p.hd = a.head_dim;
  p.group = a.num_q_heads / a.num_kv_heads;
  p.num_reqs = e.num_reqs;
  p.max_extend_len = e.max_extend_len;
  p.scale_log2 = a.scale * kLog2e;
  return p;
}

// Whether kernel k prepares p's Q tiles for the q part q (p's prepare_q fields are then set).
bool takes_prepare_q(ExtendParams& p, const ops::PrepareQkvArgs& q, DType dtype, ExtendKernel k) {
  if (!prepare_q_on() || !is_wgmma(k) || q.q != p.q || q.q_stride != p.q_stride || q.tokens != p.num_rows ||
      q.q_heads != p.nq || q.head_dim != p.hd)
    return false;
  set_prepare_q(p, q);
  return ws_prepares_q(p, dtype, wg_variant_of(k));
}

}  // namespace

void set_extend_prepare_q(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_extend_prepare_q: mode {} (-1 environment, 0 never, 1 where it can)", mode);
  prepare_q_override = mode;
}

bool extend_prepare_q_pays(int64_t tokens, int num_q_heads, int num_kv_heads, int head_dim, DType dtype) {
  if (!prepare_q_on() || tokens <= 0 || num_kv_heads <= 0 || num_q_heads % num_kv_heads != 0) return false;
  // The choice for one request of `tokens` new tokens (aligned stand-in pointers: only the shape counts).
  alignas(16) static const char stand_in[16] = {};
  ExtendParams p{};
  p.q = p.k_cache = p.v_cache = stand_in;
  p.out = const_cast<char*>(stand_in);
  p.q_stride = int64_t{num_q_heads} * head_dim;
  p.nq = num_q_heads;
  p.nkv = num_kv_heads;
  p.hd = head_dim;
  p.group = num_q_heads / num_kv_heads;
  p.num_reqs = 1;
  p.max_extend_len = static_cast<int>(std::min<int64_t>(tokens, INT32_MAX));
  p.num_slots = p.max_context = tokens;
  p.scale_log2 = 1.0f;
  const ExtendKernel k = choose_extend_kernel(p, dtype);
  if (!is_wgmma(k)) return false;
  const WgVariant v = wg_variant_of(k);
  p.prepare_q = true;  // stand-ins for ws_prepares_q's checks
  p.positions = reinterpret_cast<const int32_t*>(stand_in);
  p.cos_sin = reinterpret_cast<const float*>(stand_in);
  p.max_positions = 1;
  // Where a block starts each q tile by filling its K/V ring (one tile a block, two consumers), the
  // rewrite runs while the ring fills; on the persistent grid it adds to every tile (session 24,
  // calls B-C: qwen3-0.6b 1024 tokens on fa3-wsnp 3.37-3.42 -> 3.26-3.31 ms; 4096 on fa3-ws128ns
  // attention +11 us a layer against prepare -15; 256 on fa3-wsn64 +0.05 ms).
  // ws_prepares_q takes only those kernels.
  return ws_prepares_q(p, dtype, v);
}

bool extend_prepares_q(const ops::ExtendArgs& e, const ops::PrepareQkvArgs& q_part) {
  ExtendParams p = extend_params(e);
  return takes_prepare_q(p, q_part, e.a.dtype, choose_extend_kernel(p, e.a.dtype));
}

void attention_extend(Stream& stream, const ops::ExtendArgs& e) {
  const ops::PagedAttentionArgs& a = e.a;
  ExtendParams p = extend_params(e);
  dim3 grid(static_cast<unsigned>((e.max_extend_len + kBQ - 1) / kBQ), static_cast<unsigned>(p.nq),
            static_cast<unsigned>(e.num_reqs));
  cudaStream_t st = native_stream(stream);
  const ExtendKernel k = choose_extend_kernel(p, a.dtype);
  if (e.prepare_q != nullptr)
    GRT_CHECK(takes_prepare_q(p, *e.prepare_q, a.dtype, k),
              "attention_extend on CUDA: its kernel ({}) does not prepare q here (ask extend_prepares_q first)",
              extend_kernel_name(k));
  if (is_wgmma(k)) {
    const WgVariant v = wg_variant_of(k);
    p.pair_q_tiles = fa2_pair_q_tiles(p, wgmma_q_tile(v));
    launch_extend_wgmma(st, p, a.dtype, v);
    GRT_CUDA_CHECK_LAUNCH("attention_extend ({}) reqs={} max_extend_len={} heads {}/{} head_dim {}",
                          extend_kernel_name(k), e.num_reqs, e.max_extend_len, p.nq, p.nkv, p.hd);
    return;
  }
  if (is_fa2(k)) {
    const Fa2Tile tile = fa2_tile_of(k);
    p.pair_q_tiles = fa2_pair_q_tiles(p, tile == Fa2Tile::kQ64 || tile == Fa2Tile::kV2Q64 ? 64 : 128);
    launch_extend_fa2(st, p, a.dtype, tile);
    GRT_CUDA_CHECK_LAUNCH("attention_extend ({}) reqs={} max_extend_len={} heads {}/{} head_dim {}",
                          extend_kernel_name(k), e.num_reqs, e.max_extend_len, p.nq, p.nkv, p.hd);
    return;
  }
  if (k == ExtendKernel::kTensorCore && launch_extend_tensor_core(st, p, a.dtype)) {
    GRT_CUDA_CHECK_LAUNCH("attention_extend (tensor cores) reqs={} max_extend_len={} heads {}/{} head_dim {}",
                          e.num_reqs, e.max_extend_len, p.nq, p.nkv, p.hd);
    return;
  }
  if (a.dtype == DType::BF16) launch_extend<__nv_bfloat16>(st, p, grid);
  else if (a.dtype == DType::F16) launch_extend<__half>(st, p, grid);
  else launch_extend<float>(st, p, grid);
  GRT_CUDA_CHECK_LAUNCH("attention_extend reqs={} max_extend_len={} heads {}/{} head_dim {}", e.num_reqs,
                        e.max_extend_len, p.nq, p.nkv, p.hd);
}

}  // namespace grt::cuda
