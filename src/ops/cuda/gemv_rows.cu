// linear of 3..16 rows of x (bf16; decode at batch 3-16, extends of 3-16 tokens as decode rows):
// out[m, n] = x[m] · w[n]ᵀ with whole output columns a block and no sum across blocks. gemv.cu
// gives a block 32 output columns and splits K over its 8 warps and, where N is small, over the
// blocks of a cluster, whose sums then meet across the cluster after the PDL wait; at 9..16 rows
// its kernels hold 102-120 registers (two blocks an SM). At qwen3-0.6b's sizes that is ~28 us of a
// layer's GEMVs at 16 rows against ~17 at one row (gemv_row1.cu), and pushing the cluster's sums
// instead of pulling them lost more (bench/results/h100_2026-11-25_session23, call B).
//
// Here a block owns TB units of 8 output columns (with silu: 8 gate rows and the same 8 up rows)
// over all of K; its 8 warps are TB units x S = 8 / TB slices of K. Before pdl_wait every lane
// copies its pieces of its warp's weight rows into its own shared-memory slots (cp.async, weights
// only: pdl.cuh point 1). After the wait the block copies the M rows of x into shared memory (rows
// up to 16 zero-filled; with the norm prologue each warp normalizes two rows as it stores them),
// one barrier, then each warp runs its slice on the tensor cores (mma m16n8k16: A = the 16 rows
// of x, B = 8 rows of w) group by group, and the groups' sums of a unit meet in shared memory after
// one more barrier (with 8 units a block a warp adds its own). No cluster, ~40-70 registers.
//
// Fragments without shuffles (as gemv.cu): lane (g, t) reads the 16-byte piece t of each 32-element
// chunk of x row g, x row g + 8 and w row g; a dot product may visit k in any order, so elements
// 0-3 of the piece feed one mma and 4-7 the next, the same logical k in A and B. x is stored in
// shared memory already in that order ([chunk][row half][lane]), so each fragment is one 16-byte
// load that hits 32 banks.
//
// Bits. K is cut into 8 groups of whole 32-element chunks (by K alone). A group's sum is its two
// accumulators (even and odd chunks of the group, each in chunk order, the mma's own order within)
// added; output (m, n) is the group sums added in group order, then bias and the rounding of
// store_out / store_silu. That is fixed by K alone, never by the units a block (which warps take
// which groups), N, M or the other rows (the mma's output row m reads only x row m). So rows 3..16
// of a shape this kernel takes are one class: row m of M = 3 or M = 16 with padding rows is the
// same bits, and the silu kernel on gate_up equals silu_and_mul of the plain kernel's gate_up. The
// norm prologue computes the inverse RMS as gemv.cu and gemv_row1.cu do (the per-lane chunk order,
// then the butterfly) and rounds x as rms_norm does, so rms_norm_linear equals linear of rms_norm's
// output on this kernel bit for bit; the residual epilogue keeps the unfused bits.
//
// Takes: bf16; 3..16 rows; K <= 3072 (x in shared memory), K <= 1024 with the norm prologue; at
// most 16 MiB of weights; one wave. GRAPHRT_GEMV_ROWS=0|1 (default 1), GRAPHRT_GEMV_ROWS_TB=auto|1|2|4|8
// (units a block), GRAPHRT_GEMV_ROWS_FILL (its auto rule) and GRAPHRT_GEMV_ROWS_MIN (fewest rows) for
// A/B; set_gemv_rows / set_gemv_rows_tb override the first two (tests). At 1 and 2 rows the row
// kernel stays first (session 23 call H: this kernel at 1 row +0.13 ms at qwen3-0.6b bs 1; at 2 rows
// -0.005 at bs 2, -0.02..-0.03 at prefill of 2 tokens: left as it is).
#include <cuda_bf16.h>

#include <array>
#include <atomic>

#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gemv.h"
#include "ops/cuda/gemv_common.cuh"
#include "ops/cuda/gemv_occupancy.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace gemv_detail {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kRowsWarps = 8, kRowsThreads = kRowsWarps * 32;
constexpr int kRowsMin = 3, kRowsMax = 16;
constexpr int kRowsMaxK = 3072;     // x in shared memory: 16 x K x 2 bytes <= 96 KB
constexpr int kRowsNormMaxK = 1024;  // the prologue holds a lane's pieces of two rows in registers
constexpr int kNormPieces = kRowsNormMaxK / 256;
// K is cut into 8 groups of whole 32-element chunks (by K alone); a slice takes 8 / S of them. Each
// output adds its groups' sums in group order, so its bits do not depend on the units a block.
constexpr int kRowsGroups = 8;
constexpr int64_t kRowsMaxWeightBytes = 16ll << 20;  // as gemv_row1.cu: above it a GEMV streams more than it waits

using dense::warp_sum;

// Slot of x's 16-byte piece j (elements 8j..8j+7) of row m: chunk j / 4 of 32 elements, half m / 8,
// lane (m % 8) * 4 + j % 4.
__device__ __forceinline__ int x_slot(int m, int j) { return ((j >> 2) * 2 + (m >> 3)) * 32 + (m & 7) * 4 + (j & 3); }

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// TB: units (8 output columns) a block, S = 8 / TB slices of K; NORM: x is RMSNorm'ed by p.norm_w
// first (K <= 1024); SILU: a unit is gate rows c..c+7 and up rows silu_inter + c..
template <int TB, bool NORM, bool SILU>
__global__ void __launch_bounds__(kRowsThreads, 2) gemv_rows_kernel(Params p) {
  constexpr int S = kRowsWarps / TB, RPU = SILU ? 2 : 1, GPS = kRowsGroups / S;  // K groups a slice
  extern __shared__ uint4 rows_smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int u = warp % TB, s = warp / TB;
  const int pieces = p.K / 8, chunks = (p.K + 31) / 32;
  const int gch = (chunks + kRowsGroups - 1) / kRowsGroups, ch = GPS * gch;  // chunks a group, a slice
  uint4* const xs = rows_smem;                                         // [chunk][half][lane]
  uint4* const ws = rows_smem + chunks * 64 + warp * RPU * ch * 32;    // this warp's [r][chunk][lane]
  // [group][unit][r][128]: each group's sums of a unit (S > 1)
  float* const red = reinterpret_cast<float*>(rows_smem + chunks * 64 + kRowsWarps * RPU * ch * 32);
  const int64_t units = SILU ? p.silu_inter : p.N;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * TB + u) * 8 + g;  // the lane's w row in its unit
  const auto* w4 = static_cast<const uint4*>(p.w);
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // Before pdl_wait: weights only, every piece of the warp's slice in flight.
#pragma unroll
  for (int r = 0; r < RPU; ++r) {
    const int64_t row = r == 0 ? col : p.silu_inter + col;
    for (int c = 0; c < ch; ++c) {
      const int j = (s * ch + c) * 4 + t;
      const bool ok = col < units && j < pieces;
      cp_async16(smem_addr(ws + (r * ch + c) * 32 + lane), w4 + (ok ? row * pieces + j : 0), ok);
    }
  }
  cp_async_commit();
  uint4 nw[NORM ? kNormPieces : 1];
  if constexpr (NORM) {
#pragma unroll
    for (int i = 0; i < kNormPieces; ++i) {
      const int j = lane + 32 * i;
      nw[i] = j < pieces ? __ldg(static_cast<const uint4*>(p.norm_w) + j) : zero;
    }
  }
  pdl_wait();
  if (p.early_trigger) pdl_trigger();

  // x into shared memory; rows past M and pieces past K are zeros (the weights' are too).
  if constexpr (NORM) {
    // Warp w: rows w and w + 8, both rows' loads in flight together; gemv.cu's inverse RMS.
    uint4 v[2][kNormPieces];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = warp + 8 * h;
      const auto* xr = reinterpret_cast<const uint4*>(static_cast<const bf16*>(p.x) + (m < p.M ? m : 0) * p.x_stride);
#pragma unroll
      for (int i = 0; i < kNormPieces; ++i) {
        const int j = lane + 32 * i;
        v[h][i] = m < p.M && j < pieces ? __ldg(xr + j) : zero;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = warp + 8 * h;
      float ss = 0.0f;
#pragma unroll
      for (int i = 0; i < kNormPieces; ++i) ss = add_squares<bf16>(ss, v[h][i]);
      const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(p.K) + p.eps);
#pragma unroll
      for (int i = 0; i < kNormPieces; ++i) {
        const int j = lane + 32 * i;
        if (j < chunks * 4)
          xs[x_slot(m, j)] = m < p.M && j < pieces ? norm_chunk<bf16, true>(v[h][i], nw[i], inv) : zero;
      }
    }
  } else {
    const int row_pieces = chunks * 4, total = kRowsMax * row_pieces;
    const auto* x = static_cast<const bf16*>(p.x);
    for (int q = threadIdx.x; q < total; q += kRowsThreads) {
      const int m = q / row_pieces, j = q - m * row_pieces;
      const bool ok = m < p.M && j < pieces;
      cp_async16(smem_addr(xs + x_slot(m, j)), ok ? x + m * p.x_stride + 8 * j : x, ok);
    }
    cp_async_commit();
  }
  cp_async_wait<0>();  // this thread's weight and x copies
  __syncthreads();     // everyone's x

  // The slice's K groups in order; each group's chunks in two chains (even and odd chunks of the
  // group). S = 1: the warp adds its group sums in group order itself; else each group's sum goes
  // to shared memory and the epilogue adds them in the same order.
  float tot[RPU][4] = {};
#pragma unroll 1
  for (int gi = 0; gi < GPS; ++gi) {
    const int grp = s * GPS + gi;
    float acc[RPU][2][4] = {};
    for (int c0 = 0; c0 < gch; c0 += 2) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int c = c0 + q, kc = grp * gch + c;
        if (c >= gch || kc >= chunks) break;
        const uint4 a = xs[(kc * 2) * 32 + lane], a8 = xs[(kc * 2 + 1) * 32 + lane];
#pragma unroll
        for (int r = 0; r < RPU; ++r) {
          const uint4 b = ws[(r * ch + gi * gch + c) * 32 + lane];
          mma<bf16>(acc[r][q], a.x, a8.x, a.y, a8.y, b.x, b.y);
          mma<bf16>(acc[r][q], a.z, a8.z, a.w, a8.w, b.z, b.w);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < RPU; ++r)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float v = acc[r][0][i] + acc[r][1][i];
        if constexpr (S == 1) {
          tot[r][i] = gi == 0 ? v : tot[r][i] + v;
        } else {
          red[((grp * TB + u) * RPU + r) * 128 + (g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)] = v;
        }
      }
  }
  if (!p.early_trigger) pdl_trigger();

  // Accumulator i is output row g (+8 for i >= 2), column 2t (+1 for odd i) of the unit.
  if constexpr (S == 1) {
    const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * TB + u) * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = g + (i >= 2 ? 8 : 0);
      const int64_t n = n0 + 2 * t + (i & 1);
      if constexpr (SILU) store_silu<bf16>(p, m, n, tot[0][i], tot[1][i]);
      else store_out(p, m, n, tot[0][i]);
    }
  } else {
    __syncthreads();
    for (int e = threadIdx.x; e < TB * 128; e += kRowsThreads) {
      const int uu = e / 128, o = e % 128, m = o / 8;
      if (m >= p.M) continue;
      float v[RPU];
#pragma unroll
      for (int r = 0; r < RPU; ++r) {
        v[r] = red[(uu * RPU + r) * 128 + o];  // group 0
        for (int grp = 1; grp < kRowsGroups; ++grp) v[r] += red[((grp * TB + uu) * RPU + r) * 128 + o];
      }
      const int64_t n = (static_cast<int64_t>(blockIdx.x) * TB + uu) * 8 + o % 8;
      if constexpr (SILU) store_silu<bf16>(p, m, n, v[0], v[1]);
      else store_out(p, m, n, v[0]);
    }
  }
}

using RowsKernel = void (*)(Params);

template <bool NORM, bool SILU>
RowsKernel pick_tb(int tb) {
  switch (tb) {
    case 1: return gemv_rows_kernel<1, NORM, SILU>;
    case 2: return gemv_rows_kernel<2, NORM, SILU>;
    case 4: return gemv_rows_kernel<4, NORM, SILU>;
    case 8: return gemv_rows_kernel<8, NORM, SILU>;
    default: return nullptr;
  }
}

RowsKernel pick_kernel(int tb, bool norm, bool silu) {
  if (norm) return silu ? pick_tb<true, true>(tb) : pick_tb<true, false>(tb);
  return silu ? pick_tb<false, true>(tb) : pick_tb<false, false>(tb);
}

// Dynamic shared memory: x (16 rows), every warp's weight slots, and the slices' sums.
size_t smem_bytes(int tb, bool silu, int K) {
  const int chunks = (K + 31) / 32, s = kRowsWarps / tb, rpu = silu ? 2 : 1;
  const int ch = kRowsGroups / s * ((chunks + kRowsGroups - 1) / kRowsGroups);
  return static_cast<size_t>(chunks) * 64 * 16 + static_cast<size_t>(kRowsWarps) * rpu * ch * 32 * 16 +
         (s > 1 ? static_cast<size_t>(kRowsGroups) * tb * rpu * 128 * 4 : 0);
}

std::atomic<int64_t> rows_launches{0};  // gemv_rows_launches()
int rows_override = -1;                 // set_gemv_rows: -1 the environment
int rows_tb_override = -1;              // set_gemv_rows_tb: -1 the environment, 0 auto

bool rows_on() {
  static const int mode = env_choice("GRAPHRT_GEMV_ROWS", {"0", "1"}, 1);
  return (rows_override >= 0 ? rows_override : mode) == 1;
}

// GRAPHRT_GEMV_ROWS_MIN=1..3 (read once; default 3): the fewest rows it takes. Below 3 rows the
// 1-2-row kernel (gemv_row1.cu) goes first where it takes the shape; 1 or 2 here, with
// GRAPHRT_GEMV_ROW1=0 or GRAPHRT_GEMV_ROW1_ROWS=1, lets this kernel take those rows instead (A/B).
int rows_min() {
  static const int rows = env_int("GRAPHRT_GEMV_ROWS_MIN", kRowsMin, 1, kRowsMin);
  return rows;
}

// GRAPHRT_GEMV_ROWS_FILL=1..32 (read once; default 12): the auto rule's blocks an SM, in eighths.
// Measured (H100, bench/results/h100_2026-11-25_session23 call D, qwen3-0.6b, graph ms, 4 fresh
// processes each): 7 (qkv 4 units a block, gate_up 2) prefill of 3 / 16 tokens 0.906-0.911 /
// 1.045-1.050, bs 4 1.189-1.201; 12 (qkv 2; gate_up then fell back to gemv.cu) 0.866-0.885 /
// 1.015-1.031, 1.140-1.151; gemv.cu 0.952-0.958 / 1.056-1.059, 1.176-1.201.
int rows_fill() {
  static const int fill = env_int("GRAPHRT_GEMV_ROWS_FILL", 12, 1, 32);
  return fill;
}

// GRAPHRT_GEMV_ROWS_FILL_BIG_X=1..32 (read once; default 3): the auto rule's blocks an SM where each
// block's read of x after the wait is largest, K > 1024 and more than 8 rows (o_proj and down of
// prefills of 9-16 tokens): fewer blocks with more units each read x fewer times in all (qwen3-0.6b
// at 16 rows: 2 units a block, 64 blocks, 4 / 6 MB of x instead of 8 / 12). Geometry may follow M:
// the bits do not depend on it. Measured (H100, session 23 call I, fill 3 for every M at K > 1024
// against 12, 6 fresh processes each): prefill of 16 tokens 1.019-1.077 -> 0.979-1.013 ms, bs 16
// 1.813-1.858 -> 1.773-1.828 (o_proj 7.68 -> 5.63, down 7.55 -> 6.40 us a layer); bs 4 1.143-1.164 ->
// 1.162-1.197 (hence only above 8 rows).
int rows_fill_big_x() {
  static const int fill = env_int("GRAPHRT_GEMV_ROWS_FILL_BIG_X", 3, 1, 32);
  return fill;
}

int rows_tb() {
  static const int tb = std::array<int, 5>{0, 1, 2, 4, 8}[static_cast<size_t>(
      env_choice("GRAPHRT_GEMV_ROWS_TB", {"auto", "1", "2", "4", "8"}, 0))];
  return rows_tb_override >= 0 ? rows_tb_override : tb;
}

}  // namespace

bool launch_rows(int index, cudaStream_t stream, const Params& p, bool bf16_in, const DeviceInfo& info) {
  if (!rows_on() || !bf16_in || p.M < rows_min() || p.M > kRowsMax || p.K > kRowsMaxK) return false;
  if (static_cast<int64_t>(p.N) * p.K * 2 > kRowsMaxWeightBytes) return false;
  const bool norm = p.norm_w != nullptr, silu = p.silu_inter > 0;
  if (norm && (p.K > kRowsNormMaxK || !dense::aligned16(p.norm_w, 0, 2))) return false;
  const int64_t unit_count = ((silu ? p.silu_inter : p.N) + 7) / 8;
  // Units a block: forced, or the most that still give at least fill / 8 blocks an SM (default 12; 3
  // where x is read most, rows_fill_big_x), else more units a block until the grid fits one wave.
  // qwen3-0.6b: qkv 512 units -> 2 a block, 256 blocks; gate_up 384 -> 1 does not fit (86
  // registers: 2 blocks an SM) -> 2, 192; o_proj and down 128 -> 1 (2 above 8 rows). Geometry
  // only: the bits do not depend on it.
  int tb = rows_tb();
  const bool forced = tb != 0;
  if (!forced) {
    tb = 1;
    const int fill = p.K > kRowsNormMaxK && p.M > 8 ? rows_fill_big_x() : rows_fill();
    for (int c : {8, 4, 2})
      if ((unit_count + c - 1) / c * 8 >= static_cast<int64_t>(info.sms) * fill) {
        tb = c;
        break;
      }
  }
  RowsKernel kernel = nullptr;
  size_t smem = 0;
  int64_t blocks = 0;
  for (; tb <= kRowsWarps; tb *= 2) {
    kernel = pick_kernel(tb, norm, silu);
    smem = smem_bytes(tb, silu, p.K);
    blocks = (unit_count + tb - 1) / tb;
    const int per_sm = kernel ? gemv_blocks_per_sm(index, reinterpret_cast<const void*>(kernel), kRowsThreads, smem,
                                                   "few-row linear kernel")
                              : 0;
    if (kernel && blocks <= static_cast<int64_t>(per_sm) * info.sms) break;  // one wave
    if (forced) return false;
  }
  if (tb > kRowsWarps) return false;
  (void)launch_pdl(index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kRowsThreads), smem, stream, 1u, p);
  rows_launches.fetch_add(1, std::memory_order_relaxed);
  return true;  // the launch's error is the last error, checked by the caller
}

}  // namespace gemv_detail

void set_gemv_rows(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_gemv_rows: mode {} (-1 environment, 0 off, 1 on)", mode);
  gemv_detail::rows_override = mode;
}

void set_gemv_rows_tb(int tb) {
  GRT_CHECK(tb == -1 || tb == 0 || tb == 1 || tb == 2 || tb == 4 || tb == 8,
            "set_gemv_rows_tb: {} (-1 environment, 0 auto, 1, 2, 4 or 8 units a block)", tb);
  gemv_detail::rows_tb_override = tb;
}

int64_t gemv_rows_launches() { return gemv_detail::rows_launches.load(std::memory_order_relaxed); }

}  // namespace grt::cuda
