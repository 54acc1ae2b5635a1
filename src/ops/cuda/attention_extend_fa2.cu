// Paged extend attention, FlashAttention-2 style, on mma.sync m16n8k16 (bf16/f16 in, f32
// accumulate), head_dim 64 and 128. One block per (q tile, q head, request); each warp owns 16 or
// 32 query rows (Fa2Cfg), keeps its O accumulator in registers and runs the online softmax on the
// score fragments themselves (exp2 with the log2e-scaled scale). K/V tiles of 64 (or 32)
// positions are gathered through req_to_token with cp.async into two shared-memory stages (the
// next tile loads while this one is used; the table entries of the tile after next are read one
// step ahead), operands come from ldmatrix (V transposed), rows are padded by 16 bytes so ldmatrix
// and cp.async hit distinct banks. Causal: a block stops at the key of its last row, a warp skips
// tiles wholly in its future, only tiles crossing the diagonal or the end are masked, and where
// the grid allows each block runs a long and a short q tile (extend_fa2_kernel): equal work.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_extend_params.h"
#include "ops/cuda/attention_mma.cuh"

namespace grt::cuda {
namespace {

using attn::cp_async16;
using attn::cp_async_commit;
using attn::cp_async_wait;
using attn::fast_exp2;
using attn::kLazyRescaleLog2;
using attn::TileEntries;
using attn::ldmatrix_x4;
using attn::ldmatrix_x4_trans;
using attn::mma16816;
using attn::pack2;
using attn::smem_addr;

// WARPS warps of MT m16 row tiles each: MT = 1 keeps Q fragments in registers for the whole
// loop; MT = 2 reuses every K/V fragment for two row tiles (half the shared-memory reads per
// FLOP) and reloads Q from shared memory per tile to stay within 255 registers.
// OCC: blocks per multiprocessor the register budget aims at (launch bounds); Q stays in
// registers only where that leaves room (MT = 1 and at most 8 warps per multiprocessor).
// V2 (the "fa2-v2*" kernels): STAGES-deep cp.async ring with one barrier per key tile, and lazy
// rescaling of O (kLazyRescaleLog2). BK: keys per tile (0: 32 at 32 rows x head_dim 128, else
// 64). EXPF (V2): of every 4 score columns tiles of 8, how many take exp2 on the FMA pipe.
template <int HD, int WARPS, int MT, int OCC, bool V2 = false, int STAGES = 2, int BK = 0, int EXPF = 0>
struct Fa2Cfg {
  static constexpr bool kQInRegs = MT == 1 && WARPS * OCC <= 8;
  static constexpr int kThreads = 32 * WARPS;
  static constexpr int kBQ = 16 * MT * WARPS;              // query rows per block
  static constexpr int kStages = STAGES;
  // Keys per tile: 32 at 32 rows x head_dim 128 (fewer score and slot registers: 64 spills).
  static constexpr int kBK = BK != 0 ? BK : MT == 2 && HD == 128 ? 32 : 64;
  static constexpr int kPitch = HD + 8;                    // bf16 elements per shared row
  static constexpr int kChunks = HD / 8;                   // 16-byte chunks per row
  static constexpr int kRowsPerPass = kThreads / kChunks;  // rows the block copies at once
  static constexpr int kKvRows = kBK / kRowsPerPass;       // K/V rows per thread and tile
  static constexpr int kQRows = kBQ / kRowsPerPass;
  static constexpr int kTileElems = kBK * kPitch;
  static constexpr size_t kSmem = size_t{kBQ + 2 * kStages * kBK} * kPitch * 2;  // Q + stages of K and V
  static_assert(kThreads % kChunks == 0 && kBK % kRowsPerPass == 0 && kBQ % kRowsPerPass == 0);
  static_assert(V2 || kStages == 2, "the v1 pipeline has two stages");
  static_assert(kStages >= 2 && kStages <= 4);
};


// exp2 on the FMA pipe (9 instructions instead of one MUFU.EX2, whose pipe runs a warp at 1/8
// rate): 2^x = 2^j * 2^r with j = rint(x) taken from the low mantissa bits of x + 1.5 * 2^23 and
// r in [-0.5, 0.5]; a cubic fitted to 2^r has 7.8e-5 relative error, far below the 2^-9 of the
// bf16 P it feeds. x is clamped at -126 (masked -inf gives 2^-126: no weight next to any real key).
__device__ __forceinline__ float poly_exp2(float x) {
  x = fmaxf(x, -126.0f);
  const float t = x + 12582912.0f;
  const float r = x - (t - 12582912.0f);
  const float p = fmaf(fmaf(fmaf(0.0550887f, r, 0.2426041f), r, 0.6932762f), r, 0.9999289f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Query tile `qt` of request blockIdx.z, head blockIdx.y (ext: the request's clamped extend
// length, qt * kBQ < ext).
// -inf on the scores of one 16-row m tile (mma accumulator layout: element e of column block j
// holds key key0 + 8 j + (e & 1), query row qrow0 + 8 (e / 2)) whose key lies after the query
// (causal) or past the keys of the request.
template <int BK>
__device__ __forceinline__ void mask_scores(float (&s)[BK / 8][4], int key0, int qrow0, int kv_end) {
#pragma unroll
  for (int j = 0; j < BK / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + 8 * j + (e & 1);
      const int qpos = qrow0 + 8 * (e / 2);
      if (key > qpos || key >= kv_end) s[j][e] = -INFINITY;
    }
}

template <typename T, int HD, int WARPS, int MT, int OCC, bool V2, int STAGES, int BK, int EXPF>
__device__ __forceinline__ void fa2_tile(const ExtendParams& p, int qt, int ext, unsigned char* smem_raw) {
  using C = Fa2Cfg<HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>;
  constexpr int kWarpRows = 16 * MT;
  constexpr int kBK = C::kBK;
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* kvs = qs + C::kBQ * C::kPitch;  // stage s: K at kvs + 2s * tile, V at kvs + (2s + 1) * tile

  const int b = blockIdx.z, h = blockIdx.y, kvh = h / p.group;
  const int q0 = qt * C::kBQ;
  const int64_t prefix = max(p.prefix_lens[b], 0);
  const int64_t start = p.extend_start_loc[b];
  const int32_t req = p.req_pool_indices[b];
  const int32_t* table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
  const int rows = min(C::kBQ, ext - q0);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // Positions fit i32 (fa2_supports bounds max_context).
  const int kv_end = static_cast<int>(min(prefix + q0 + rows, p.max_context));
  const int num_tiles = static_cast<int>((kv_end + kBK - 1) / kBK);

  // Copy roles: this thread moves 16-byte chunk `chunk` of rows crow, crow + kRowsPerPass, ...
  const int chunk = tid % C::kChunks, crow = tid / C::kChunks;
  const int64_t width = static_cast<int64_t>(p.nkv) * HD;
  const T* kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * HD + chunk * 8;
  const T* vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * HD + chunk * 8;

  // Q tile (rows past the request or the output zero-filled).
  {
    const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(h) * HD + chunk * 8;
#pragma unroll
    for (int i = 0; i < C::kQRows; ++i) {
      const int r = crow + i * C::kRowsPerPass;
      const int64_t row = start + q0 + r;
      const bool ok = r < rows && row >= 0 && row < p.num_rows;
      cp_async16(smem_addr(qs + r * C::kPitch + chunk * 8), ok ? q + row * p.q_stride : q, ok);
    }
  }
  TileEntries<C::kKvRows> slots;  // this thread's rows of tile `t` (read ahead; attn::TileEntries)
  auto load_slots = [&](int t) { slots.read(table, t * kBK + crow, C::kRowsPerPass, kv_end); };
  auto issue_tile = [&](int stage) {
    T* ks = kvs + (2 * stage) * C::kTileElems;
    T* vs = ks + C::kTileElems;
#pragma unroll
    for (int i = 0; i < C::kKvRows; ++i) {
      const int r = crow + i * C::kRowsPerPass;
      const bool ok = slots.ok(i);
      const int64_t off = ok ? slots.slot(i, p.num_slots) * width : 0;
      cp_async16(smem_addr(ks + r * C::kPitch + chunk * 8), kc + off, ok);
      cp_async16(smem_addr(vs + r * C::kPitch + chunk * 8), vc + off, ok);
    }
  };
  load_slots(0);
  issue_tile(0);
  cp_async_commit();  // group 0: Q and tile 0
  if constexpr (V2) {
    // Fill the ring but one stage: group s holds tile s (empty past the last tile).
#pragma unroll
    for (int st = 1; st < C::kStages - 1; ++st) {
      if (st < num_tiles) {
        load_slots(st);
        issue_tile(st);
      }
      cp_async_commit();
    }
    if (C::kStages - 1 < num_tiles) load_slots(C::kStages - 1);
  } else {
    if (num_tiles > 1) load_slots(1);
  }

  // Fragment ownership (mma layouts): in row tile mt this lane holds rows g and g + 8, score
  // and output columns 2t, 2t + 1 of every 8-column tile.
  const int g = lane / 4, t4 = lane % 4;
  const int wrow0 = warp * kWarpRows;
  const bool warp_active = wrow0 < rows;
  // Position of the warp's first row, clamped to kv_end: rows at or past it see every key < kv_end
  // either way, and the clamp keeps positions in i32.
  const int wpos0 = static_cast<int>(min(prefix + q0 + wrow0, static_cast<int64_t>(kv_end)));

  uint32_t qf[C::kQInRegs ? HD / 16 : 1][4];  // all of Q, loaded once (kQInRegs)
  float o[MT][HD / 8][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
  }

  // ldmatrix lane addresses (element offsets inside a tile): Q/A: row lane%16, col 8*(lane/16);
  // K/B: key (lane%8) + 8*(lane/16), dim 8*((lane/8)%2); V/B transposed: key (lane%8) +
  // 8*((lane/8)%2), dim 8*(lane/16).
  const int a_off = (lane % 16) * C::kPitch + (lane / 16) * 8;
  const int k_off = ((lane % 8) + (lane / 16) * 8) * C::kPitch + ((lane / 8) % 2) * 8;
  const int v_off = ((lane % 8) + ((lane / 8) % 2) * 8) * C::kPitch + (lane / 16) * 8;

  int rstage = 0, wstage = C::kStages - 1;  // V2: stage of tile t, of tile t + kStages - 1
  for (int t = 0; t < num_tiles; ++t) {
    if constexpr (V2) {
      cp_async_wait<C::kStages - 2>();  // this thread's copies of tile t (and Q) landed
      __syncthreads();  // every thread's did, and every warp is done with tile t - 1, whose stage is refilled now
      if (t + C::kStages - 1 < num_tiles) issue_tile(wstage);
      cp_async_commit();
      if (t + C::kStages < num_tiles) load_slots(t + C::kStages);
    } else {
      if (t + 1 < num_tiles) issue_tile((t + 1) & 1);
      cp_async_commit();
      if (t + 2 < num_tiles) load_slots(t + 2);
      cp_async_wait<1>();
      __syncthreads();
    }
    const uint32_t qs_addr = smem_addr(qs + wrow0 * C::kPitch + a_off);
    if constexpr (C::kQInRegs) {
      if (t == 0) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) ldmatrix_x4(qf[kk], qs_addr + kk * 16 * 2);
      }
    }
    const T* ks = kvs + (2 * (V2 ? rstage : (t & 1))) * C::kTileElems;
    const T* vs = ks + C::kTileElems;
    const int k0 = t * kBK;
    if (warp_active && k0 <= wpos0 + kWarpRows - 1) {  // else: every key is in the warp's future
      const uint32_t ks_addr = smem_addr(ks + k_off), vs_addr = smem_addr(vs + v_off);

      // S = Q · Kᵀ (16 MT x kBK).
      float s[MT][kBK / 8][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < kBK / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        uint32_t qa[MT][4];
        if constexpr (!C::kQInRegs) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(qa[mt], qs_addr + (mt * 16 * C::kPitch + kk * 16) * 2);
        }
#pragma unroll
        for (int np = 0; np < kBK / 16; ++np) {
          uint32_t bf[4];
          ldmatrix_x4(bf, ks_addr + (np * 16 * C::kPitch + kk * 16) * 2);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            const uint32_t* a = C::kQInRegs ? qf[C::kQInRegs ? kk : 0] : qa[mt];
            mma16816<T>(s[mt][2 * np], a, bf[0], bf[1]);
            mma16816<T>(s[mt][2 * np + 1], a, bf[2], bf[3]);
          }
        }
      }

      // Mask keys past a row's position or past kv_end (raw scores; the scale, > 0, is folded
      // into the exponent below and into the running max).
      const bool need_mask = k0 + kBK - 1 > wpos0 || k0 + kBK > kv_end;
      const float sl2 = p.scale_log2;
      uint32_t pf[MT][kBK / 16][4];
      if constexpr (V2) {
        // Row maxima (log2 units) of this tile; O is rescaled only where some row of the warp
        // grew past its running max by more than kLazyRescaleLog2.
        float mx[MT][2];
        bool grow = false;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (need_mask) mask_scores<kBK>(s[mt], k0 + 2 * t4, wpos0 + 16 * mt + g, kv_end);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            float x = -INFINITY;
#pragma unroll
            for (int j = 0; j < kBK / 8; ++j) x = fmaxf(x, fmaxf(s[mt][j][2 * i], s[mt][j][2 * i + 1]));
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
            mx[mt][i] = x * sl2;
            grow |= mx[mt][i] > m[mt][i] + kLazyRescaleLog2;
          }
        }
        if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              const float mn = fmaxf(m[mt][i], mx[mt][i]);
              const float alpha = fast_exp2(m[mt][i] - (mn == -INFINITY ? 0.0f : mn));
              m[mt][i] = mn;
              l[mt][i] *= alpha;
#pragma unroll
              for (int j = 0; j < HD / 8; ++j) {
                o[mt][j][2 * i] *= alpha;
                o[mt][j][2 * i + 1] *= alpha;
              }
            }
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const float mu = m[mt][i] == -INFINITY ? 0.0f : m[mt][i];  // nothing visible yet: zeros
            float rs = 0.0f;
#pragma unroll
            for (int j = 0; j < kBK / 8; ++j) {
              const float x0 = fmaf(s[mt][j][2 * i], sl2, -mu), x1 = fmaf(s[mt][j][2 * i + 1], sl2, -mu);
              const bool fma_pipe = j % 4 < EXPF;  // Fa2Cfg: share of exp2 taken off the MUFU pipe
              s[mt][j][2 * i] = fma_pipe ? poly_exp2(x0) : fast_exp2(x0);
              s[mt][j][2 * i + 1] = fma_pipe ? poly_exp2(x1) : fast_exp2(x1);
              rs += s[mt][j][2 * i] + s[mt][j][2 * i + 1];
            }
            l[mt][i] += rs;
          }
#pragma unroll
          for (int kk = 0; kk < kBK / 16; ++kk) {
            pf[mt][kk][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            pf[mt][kk][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            pf[mt][kk][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            pf[mt][kk][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
          }
        }
      } else {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (need_mask) mask_scores<kBK>(s[mt], k0 + 2 * t4, wpos0 + 16 * mt + g, kv_end);

          // Online softmax per row (the 4 lanes of a quad share a row).
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < kBK / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * i], s[mt][j][2 * i + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mn = fmaxf(m[mt][i], mx * sl2);
            const float mu = mn == -INFINITY ? 0.0f : mn;  // nothing visible yet: keep zeros
            const float alpha = fast_exp2(m[mt][i] - mu);
            m[mt][i] = mn;
            float rs = 0.0f;
#pragma unroll
            for (int j = 0; j < kBK / 8; ++j) {
              s[mt][j][2 * i] = fast_exp2(fmaf(s[mt][j][2 * i], sl2, -mu));
              s[mt][j][2 * i + 1] = fast_exp2(fmaf(s[mt][j][2 * i + 1], sl2, -mu));
              rs += s[mt][j][2 * i] + s[mt][j][2 * i + 1];
            }
            l[mt][i] = l[mt][i] * alpha + rs;
#pragma unroll
            for (int j = 0; j < HD / 8; ++j) {
              o[mt][j][2 * i] *= alpha;
              o[mt][j][2 * i + 1] *= alpha;
            }
          }
          // P as A fragments: the score layout of n-tiles 2kk, 2kk+1 is the A layout of k-step kk.
#pragma unroll
          for (int kk = 0; kk < kBK / 16; ++kk) {
            pf[mt][kk][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            pf[mt][kk][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            pf[mt][kk][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            pf[mt][kk][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
          }
        }
      }

      // O += P · V (16 MT x HD).
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < HD / 16; ++np) {
          uint32_t bf[4];
          ldmatrix_x4_trans(bf, vs_addr + (kk * 16 * C::kPitch + np * 16) * 2);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816<T>(o[mt][2 * np], pf[mt][kk], bf[0], bf[1]);
            mma16816<T>(o[mt][2 * np + 1], pf[mt][kk], bf[2], bf[3]);
          }
        }
      }
    }
    if constexpr (V2) {
      rstage = rstage + 1 == C::kStages ? 0 : rstage + 1;
      wstage = wstage + 1 == C::kStages ? 0 : wstage + 1;
    } else {
      __syncthreads();  // this stage is refilled by the next iteration's copy
    }
  }
  cp_async_wait<0>();

  // Normalise and store: row sums are split over the quad.
  T* out = static_cast<T*>(p.out) + static_cast<int64_t>(h) * HD + 2 * t4;
  const int64_t out_stride = static_cast<int64_t>(p.nq) * HD;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float lt = l[mt][i];
      lt += __shfl_xor_sync(0xffffffffu, lt, 1);
      lt += __shfl_xor_sync(0xffffffffu, lt, 2);
      const int r = wrow0 + 16 * mt + g + 8 * i;
      const int64_t row = start + q0 + r;
      if (r >= rows || row < 0 || row >= p.num_rows) continue;
      const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
      T* dst = out + row * out_stride;
#pragma unroll
      for (int j = 0; j < HD / 8; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) = pack2<T>(o[mt][j][2 * i] * inv, o[mt][j][2 * i + 1] * inv);
    }
}

// Causal work grows with the q tile. With p.pair_q_tiles block x takes the pair of tiles
// (tiles - 1 - x, x) of its request and head: every block of a request does about the same
// work, and the grid is an even wave instead of a tail of the longest tiles. Without (grids too
// small to halve) block x takes one tile, the heaviest first.
template <typename T, int HD, int WARPS, int MT, int OCC, bool V2, int STAGES, int BK, int EXPF>
__global__ void __launch_bounds__(Fa2Cfg<HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>::kThreads, OCC)
    extend_fa2_kernel(ExtendParams p) {
  using C = Fa2Cfg<HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int ext = min(max(p.extend_lens[blockIdx.z], 0), p.max_extend_len);
  const int tiles = (ext + C::kBQ - 1) / C::kBQ;
  int first = 0, second = -1;
  if (!attn::extend_block_tiles(p.pair_q_tiles, tiles, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), first,
                          second))
    return;
  // One inlined body in a loop (not two copies): keeps register allocation as for one tile.
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    const int qt = pass == 0 ? first : second;
    if (qt < 0) break;
    if (pass == 1) __syncthreads();  // shared memory is reused by the second tile
    fa2_tile<T, HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>(p, qt, ext, smem_raw);
  }
}

template <typename T, int HD, int WARPS, int MT, int OCC, bool V2 = false, int STAGES = 2, int BK = 0, int EXPF = 0>
void launch_fa2(cudaStream_t st, const ExtendParams& p) {
  using C = Fa2Cfg<HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>;
  auto kernel = extend_fa2_kernel<T, HD, WARPS, MT, OCC, V2, STAGES, BK, EXPF>;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for attention_extend fa2 (head_dim {}, {} warps)", C::kSmem, HD,
                 WARPS);
  const int tiles = (p.max_extend_len + C::kBQ - 1) / C::kBQ;
  dim3 grid(static_cast<unsigned>(p.pair_q_tiles ? (tiles + 1) / 2 : tiles), static_cast<unsigned>(p.nq),
            static_cast<unsigned>(p.num_reqs));
  kernel<<<grid, C::kThreads, C::kSmem, st>>>(p);
}

template <typename T, int HD>
void launch_fa2_hd(cudaStream_t st, const ExtendParams& p, Fa2Tile tile) {
  switch (tile) {
    case Fa2Tile::kQ64: launch_fa2<T, HD, 4, 1, 2>(st, p); break;
    case Fa2Tile::kQ128: launch_fa2<T, HD, 8, 1, 1>(st, p); break;
    case Fa2Tile::kQ128W4: launch_fa2<T, HD, 4, 2, 2>(st, p); break;
    case Fa2Tile::kV2Q64: launch_fa2<T, HD, 4, 1, 2, true, 2>(st, p); break;
    case Fa2Tile::kV2: launch_fa2<T, HD, 4, 2, 2, true, 3>(st, p); break;
    case Fa2Tile::kV2K64: launch_fa2<T, HD, 4, 2, 2, true, 2, 64>(st, p); break;
    case Fa2Tile::kV2Exp: launch_fa2<T, HD, 4, 2, 2, true, 3, 0, 1>(st, p); break;
  }
}

template <typename T>
void launch_fa2_typed(cudaStream_t st, const ExtendParams& p, Fa2Tile tile) {
  if (p.hd == 64) launch_fa2_hd<T, 64>(st, p, tile);
  else launch_fa2_hd<T, 128>(st, p, tile);
}

}  // namespace

bool fa2_supports(const ExtendParams& p, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::F16) return false;
  if (p.hd != 64 && p.hd != 128) return false;
  // 16-byte cp.async of q rows and cache rows.
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return aligned(p.q) && aligned(p.k_cache) && aligned(p.v_cache) && aligned(p.out) && (p.q_stride * 2) % 16 == 0 &&
         p.num_slots <= INT32_MAX && p.max_context <= INT32_MAX / 2 && p.scale_log2 > 0.0f;
}

void launch_extend_fa2(cudaStream_t stream, const ExtendParams& p, DType dtype, Fa2Tile tile) {
  GRT_CHECK(fa2_supports(p, dtype),
            "attention_extend fa2: unsupported case (dtype {}, head_dim {}; needs bf16/f16, head_dim 64 or 128, "
            "16-byte aligned rows)",
            dtype_name(dtype), p.hd);
  if (dtype == DType::BF16) launch_fa2_typed<__nv_bfloat16>(stream, p, tile);
  else launch_fa2_typed<__half>(stream, p, tile);
}

}  // namespace grt::cuda
