// linear of ONE or TWO rows of x (M <= 2, bf16; decode at batch 1 and 2): out[m, n] = x[m] · w[n]ᵀ with a warp
// per output row and no reduction across warps or blocks. The M <= 16 kernel (gemv.cu) gives the
// tensor cores a 32-column tile and splits K over the 8 warps of a block and the blocks of a
// cluster, so that every SM streams: each of its sums then meets in shared memory and across the
// cluster after the PDL wait. At qwen3-0.6b's sizes (4-13 MB a GEMV) that reduction is most of a
// GEMV's time in the decode graph: in-kernel marks (bench/results/h100_2026-11-25_session18, call F)
// put o_proj's loop at 0.5 us and its sums and cluster barriers at ~3 of its ~4.5 us from wait to
// exit, and its weights arriving earlier did not shorten it (session 22 call A).
//
// Here a warp owns U consecutive output units (a row of w; with silu, gate row c and up row
// inter + c) over all of K: lane l holds chunks l, l + 32, ... (16 bytes each) of each of its
// rows (in shared memory or registers, below), asked for before pdl_wait (weights only: pdl.cuh
// point 1), so after the wait a warp reads x (one L2 trip), optionally normalizes it, runs its
// fmaf chains and one xor butterfly per row, and stores. No barrier, no cluster.
//
// Bits. A row's sum is lane l's fmaf chain over its chunks in ascending order, element order
// within a chunk, then the butterfly 16, 8, 4, 2, 1: fixed by K alone, never by U, the grid, the
// GPU or other rows. It is not gemv.cu's order, so 1-row results are their own class (gemv.cu:
// rows 2..16; gemv_wide.cu: 17..64). The fusions keep the unfused sequence's bits on this path:
// the norm prologue computes gemv.cu's inverse RMS (the same per-lane order and butterfly) and
// rounds x as rms_norm does (norm_chunk); the residual and silu epilogues are gemv_common.cuh's.
//
// Where the weights wait: in registers (ptxas, sm_90a: 44-128 a thread; qwen3-0.6b's qkv 99 with 2
// units a warp and 256 blocks, o_proj 78 (1, 128), gate_up 127 (2, 192), down 96 (1, 128)) or in
// shared memory (SMEM: 38-65 registers, the pieces copied by cp.async). Measured (H100,
// bench/results/h100_2026-11-25_session22, calls B and C, qwen3-0.6b bs 1 ctx 1024, graph ms, fresh
// processes): off 1.009-1.032, registers 0.961-0.981, shared memory 0.862-0.890; prefill of 1 token
// 0.914-0.931 / 0.815-0.833 / 0.761-0.786. The trace says why: held in registers, a GEMV's blocks
// no longer fit beside its predecessor's and load their weights only as it leaves (gate_up 6.40 ->
// 7.17 us a layer); in shared memory gate_up 3.84, qkv 3.58, down 4.61, but o_proj 5.12 against 3.33
// in registers. Mixing them (o_proj in registers, the rest in shared memory: call D) lost, 0.913-
// 0.928 ms (that o_proj took 6.53 us beside the shared-memory kernels). So shared memory by default.
//
// Two rows (weights in shared memory): each lane holds both rows' chunks of x and runs one chain
// a row, so row m of a 2-row call is bit for bit the row alone (session 22 call J: qwen3-0.6b bs
// 2 1.061-1.076 -> 1.008-1.012 ms, prefill of 2 tokens 0.963-0.983 -> 0.867-0.879).
//
// Takes: bf16; K <= 1024 with the norm prologue or silu, K <= 3072 without; at most 16 MiB of
// weights; a grid that fits one wave (checked against the occupancy of the kernel chosen).
// GRAPHRT_GEMV_ROW1=0|regs|smem (default smem), GRAPHRT_GEMV_ROW1_UNITS=auto|1|2|4 (units a warp)
// and GRAPHRT_GEMV_ROW1_RES_EARLY=0|1 (default 1: the residual element read beside x; call I:
// qwen3-0.6b bs 1 0.891-0.908 -> 0.882-0.890 ms, down 4.61 -> 3.97 us a layer) for A/B;
// set_gemv_row1 / set_gemv_row1_units override the first two (tests).
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
constexpr int kRowWarps = 8, kRowThreads = kRowWarps * 32;
// 16-byte pieces a lane holds after the wait (weights, x and the norm weight): 96 registers, so
// that two blocks of 256 threads fit an SM without spills (launch bounds below).
constexpr int kMaxLanePieces = 24;
constexpr int kMaxChunksPerLane = 12;  // K <= 3072
// Rows of x (2 only with the weights in shared memory). 4-row kernels (qkv and gate_up at K 1024,
// 107-128 registers) measured slower than gemv.cu (session 22 call J: qwen3-0.6b bs 4 1.17 -> 1.41
// ms, prefill of 4 tokens 0.94 -> 1.15), 2 rows faster (bs 2 1.061-1.076 -> 1.008-1.012).
constexpr int kRow1MaxRows = 2;
// The largest weight it takes: above it a GEMV streams more than it waits (session 22 call C:
// qwen3-30b-a3b's 21 MB qkv, 320 blocks for 132 SMs, cost its bs-1 step +0.11 ms).
constexpr int64_t kRow1MaxWeightBytes = 16ll << 20;

using dense::dot8;
using dense::warp_sum;

// CPL: 16-byte chunks a lane takes of a row (K <= 256 * CPL); U: units a warp; NORM: x is
// RMSNorm'ed by p.norm_w first; SILU: a unit is gate row c and up row silu_inter + c; SMEM: the
// weights wait in shared memory (copied there by cp.async, lane l's pieces in its own slots, so
// only its own cp.async.wait_group orders them: no barrier) instead of registers.
// MR: rows of x the kernel takes (1, or 2 with SMEM; p.M <= MR, rows past p.M are zeros).
// Each row of x goes through the same per-lane chain as a single row would: the bits of row m do
// not depend on M.
template <int CPL, int U, bool NORM, bool SILU, bool SMEM, int MR>
__global__ void __launch_bounds__(kRowThreads, 2) gemv_row1_kernel(Params p) {
  constexpr int RPU = SILU ? 2 : 1, kPieces = U * RPU * CPL;
  static_assert(MR == 1 || SMEM, "more rows of x only with the weights in shared memory");
  static_assert((SMEM ? 0 : kPieces) + CPL * (MR + (NORM ? 1 : 0)) <= kMaxLanePieces,
                "registers: see kMaxLanePieces");
  extern __shared__ uint4 row1_held[];  // SMEM: [warp][piece][lane]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint4* const held = row1_held + static_cast<int64_t>(warp) * kPieces * 32 + lane;
  const int64_t unit0 = (static_cast<int64_t>(blockIdx.x) * kRowWarps + warp) * U;
  const int64_t units = SILU ? p.silu_inter : p.N;
  const int chunks = p.K / 8;
  const auto* w4 = static_cast<const uint4*>(p.w);
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // Before pdl_wait: weights only (pdl.cuh point 1), every piece of the warp's rows in flight.
  uint4 w[SMEM ? 1 : U][SMEM ? 1 : RPU][SMEM ? 1 : CPL];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int h = 0; h < RPU; ++h) {
      const int64_t unit = unit0 + u;
      const int64_t row = h == 0 ? unit : p.silu_inter + unit;
#pragma unroll
      for (int i = 0; i < CPL; ++i) {
        const int c = lane + 32 * i;
        const bool ok = unit < units && c < chunks;
        if constexpr (SMEM) {  // zero-filled past the rows (src-size 0 reads nothing)
          cp_async16(static_cast<uint32_t>(__cvta_generic_to_shared(held + ((u * RPU + h) * CPL + i) * 32)),
                     w4 + (ok ? row * chunks + c : 0), ok);
        } else {
          w[u][h][i] = ok ? load_weight(w4 + row * chunks + c) : zero;
        }
      }
    }
  if constexpr (SMEM) cp_async_commit();
  uint4 nw[NORM ? CPL : 1];
  if constexpr (NORM) {
#pragma unroll
    for (int i = 0; i < CPL; ++i) {
      const int c = lane + 32 * i;
      nw[i] = c < chunks ? __ldg(static_cast<const uint4*>(p.norm_w) + c) : zero;
    }
  }
  pdl_wait();
  if (p.early_trigger) pdl_trigger();  // the next kernel's blocks load their weights beside ours

  uint4 x[MR][CPL];
#pragma unroll
  for (int m = 0; m < MR; ++m) {
    const bool mok = m < p.M;
    const auto* xr = reinterpret_cast<const uint4*>(static_cast<const bf16*>(p.x) + (mok ? m : 0) * p.x_stride);
#pragma unroll
    for (int i = 0; i < CPL; ++i) {
      const int c = lane + 32 * i;
      x[m][i] = mok && c < chunks ? __ldg(xr + c) : zero;
    }
  }
  // The residual epilogue's element (lane u stores unit u), asked for beside x instead of after
  // the sums: one L2 trip off the end of the chain. bf16 residuals (the row kernel's dtype); one
  // row of x.
  const bool res_early = MR == 1 && !SILU && p.residual != nullptr && p.out_kind == kBF16 && p.res_early;
  float res_old = 0.0f;
  if (res_early && lane < U && unit0 + lane < units)
    res_old = __bfloat162float(static_cast<const bf16*>(p.residual)[unit0 + lane]);
  if constexpr (NORM) {
    // gemv.cu's one-pass inverse RMS of each row (zeros past K leave the sum's bits as they are),
    // then rms_norm's rounding of each element.
#pragma unroll
    for (int m = 0; m < MR; ++m) {
      float ss = 0.0f;
#pragma unroll
      for (int i = 0; i < CPL; ++i) ss = add_squares<bf16>(ss, x[m][i]);
      const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(p.K) + p.eps);
#pragma unroll
      for (int i = 0; i < CPL; ++i)
        if (m < p.M && lane + 32 * i < chunks) x[m][i] = norm_chunk<bf16, true>(x[m][i], nw[i], inv);
    }
  }
  if constexpr (SMEM) cp_async_wait<0>();  // this lane's pieces
  float acc[U][RPU][MR];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int h = 0; h < RPU; ++h) {
      float a[MR] = {};
#pragma unroll
      for (int i = 0; i < CPL; ++i) {
        const uint4 wv = SMEM ? held[((u * RPU + h) * CPL + i) * 32] : w[SMEM ? 0 : u][SMEM ? 0 : h][SMEM ? 0 : i];
#pragma unroll
        for (int m = 0; m < MR; ++m) a[m] = dot8(wv, x[m][i], a[m]);
      }
#pragma unroll
      for (int m = 0; m < MR; ++m) acc[u][h][m] = warp_sum(a[m]);
    }
  if (!p.early_trigger) pdl_trigger();
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int m = 0; m < MR; ++m) {  // lane u * MR + m stores output (m, unit u)
      const int64_t unit = unit0 + u;
      if (lane != u * MR + m || unit >= units) continue;
      if constexpr (SILU) {
        store_silu<bf16>(p, m, unit, acc[u][0][m], acc[u][1][m]);
      } else if (res_early) {  // store_out's residual add, with the element read above
        float y = acc[u][0][m];
        if (p.bias_kind != kNone) y += load_kind(p.bias, p.bias_kind, unit);
        static_cast<bf16*>(p.residual)[unit] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(y)) + res_old);
      } else {
        store_out(p, m, unit, acc[u][0][m]);
      }
    }
}

using RowKernel = void (*)(Params);

// The kernels instantiated: within kMaxLanePieces; silu and the norm prologue only at K <= 1024
// (at 2048 the norm kernel spilled at 128 registers); more rows of x only from shared memory.
template <int CPL, int U, bool NORM, bool SILU, bool SMEM, int MR>
constexpr bool instantiated() {
  if ((MR > 1 && !SMEM) || ((NORM || SILU) && CPL > 4) || (SILU && U > 2) || (CPL == 8 && U > 2) ||
      (CPL == 12 && U > 1))
    return false;
  return (SMEM ? 0 : U * (SILU ? 2 : 1) * CPL) + CPL * (MR + (NORM ? 1 : 0)) <= kMaxLanePieces;
}

template <int CPL, int U, bool NORM, bool SILU, bool SMEM, int MR>
RowKernel kernel_if() {
  if constexpr (instantiated<CPL, U, NORM, SILU, SMEM, MR>()) return gemv_row1_kernel<CPL, U, NORM, SILU, SMEM, MR>;
  else return nullptr;
}

template <bool NORM, bool SILU, bool SMEM, int MR>
RowKernel pick(int cpl, int u) {
  switch (cpl * 10 + u) {
    case 41: return kernel_if<4, 1, NORM, SILU, SMEM, MR>();
    case 42: return kernel_if<4, 2, NORM, SILU, SMEM, MR>();
    case 44: return kernel_if<4, 4, NORM, SILU, SMEM, MR>();
    case 81: return kernel_if<8, 1, NORM, SILU, SMEM, MR>();
    case 82: return kernel_if<8, 2, NORM, SILU, SMEM, MR>();
    case 121: return kernel_if<12, 1, NORM, SILU, SMEM, MR>();
    default: return nullptr;
  }
}

template <bool SMEM, int MR>
RowKernel pick_rows(int cpl, int u, bool norm, bool silu) {
  if (norm) return silu ? pick<true, true, SMEM, MR>(cpl, u) : pick<true, false, SMEM, MR>(cpl, u);
  return silu ? pick<false, true, SMEM, MR>(cpl, u) : pick<false, false, SMEM, MR>(cpl, u);
}

RowKernel pick_kernel(int cpl, int u, bool norm, bool silu, bool smem, int mr) {
  if (!smem) return mr == 1 ? pick_rows<false, 1>(cpl, u, norm, silu) : nullptr;
  return mr == 1 ? pick_rows<true, 1>(cpl, u, norm, silu) : pick_rows<true, 2>(cpl, u, norm, silu);
}

// Dynamic shared memory of the SMEM kernels: every piece of the block's warps.
int held_bytes(int cpl, int u, bool silu) { return kRowWarps * u * (silu ? 2 : 1) * cpl * 32 * 16; }

std::atomic<int64_t> row1_launches{0};  // gemv_row1_launches()
int row1_override = -1;        // set_gemv_row1: -1 the environment
int row1_units_override = -1;  // set_gemv_row1_units: -1 the environment, 0 auto

// 0 off, 1 weights held in registers, 2 in shared memory (the default).
int row1_mode() {
  static const int mode = env_choice("GRAPHRT_GEMV_ROW1", {"0", "regs", "smem"}, 2);
  return row1_override >= 0 ? row1_override : mode;
}

// GRAPHRT_GEMV_ROW1_RES_EARLY=0|1 (read once): the residual element read beside x (1) or after the
// sums by store_out (0).
bool row1_res_early() {
  static const bool on = env_choice("GRAPHRT_GEMV_ROW1_RES_EARLY", {"0", "1"}, 1) == 1;
  return on;
}

// GRAPHRT_GEMV_ROW1_ROWS=1|2 (read once): the most rows of x it takes.
int row1_max_rows() {
  static const int rows = env_int("GRAPHRT_GEMV_ROW1_ROWS", kRow1MaxRows, 1, kRow1MaxRows);
  return rows;
}

int row1_units() {
  static const int mode = std::array<int, 4>{0, 1, 2, 4}[static_cast<size_t>(
      env_choice("GRAPHRT_GEMV_ROW1_UNITS", {"auto", "1", "2", "4"}, 0))];
  return row1_units_override >= 0 ? row1_units_override : mode;
}

}  // namespace

bool launch_row1(int index, cudaStream_t stream, const Params& p, bool bf16_in, const DeviceInfo& info) {
  const int mode = row1_mode();
  if (mode == 0 || p.M < 1 || p.M > row1_max_rows() || !bf16_in || p.K > 256 * kMaxChunksPerLane) return false;
  const int mr = p.M;
  if (static_cast<int64_t>(p.N) * p.K * 2 > kRow1MaxWeightBytes) return false;
  if (p.norm_w && !dense::aligned16(p.norm_w, 0, 2)) return false;
  const bool norm = p.norm_w != nullptr, silu = p.silu_inter > 0;
  const int cpl = p.K <= 1024 ? 4 : p.K <= 2048 ? 8 : 12;
  const bool smem_held = mode == 2;
  const int64_t units = silu ? p.silu_inter : p.N;
  // Units a warp: forced, or the most whose grid still gives every SM a block (more pieces in
  // flight a lane, fewer blocks to land beside the previous kernel's), else 1.
  RowKernel kernel = nullptr;
  int64_t blocks = 0;
  int smem = 0;
  const int forced = row1_units();
  for (int u : {4, 2, 1}) {
    if (forced != 0 && u != forced) continue;
    RowKernel k = pick_kernel(cpl, u, norm, silu, smem_held, mr);
    if (!k) continue;
    const int64_t b = (units + int64_t{kRowWarps} * u - 1) / (int64_t{kRowWarps} * u);
    kernel = k;
    blocks = b;
    smem = smem_held ? held_bytes(cpl, u, silu) : 0;
    if (forced != 0 || b >= info.sms) break;
  }
  if (!kernel) return false;
  const int per_sm = gemv_blocks_per_sm(index, reinterpret_cast<const void*>(kernel), kRowThreads,
                                        static_cast<size_t>(smem), "1-row linear kernel");
  if (blocks > static_cast<int64_t>(per_sm) * info.sms) return false;  // one wave
  Params q = p;
  q.res_early = row1_res_early() ? 1 : 0;
  (void)launch_pdl(index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kRowThreads), static_cast<size_t>(smem),
                   stream, 1u, q);
  row1_launches.fetch_add(1, std::memory_order_relaxed);
  return true;  // the launch's error is the last error, checked by the caller
}

}  // namespace gemv_detail

void set_gemv_row1(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 3,
            "set_gemv_row1: mode {} (-1 environment, 0 off, 1 registers, 2 shared memory, 3 auto)", mode);
  gemv_detail::row1_override = mode;
}

void set_gemv_row1_units(int units) {
  GRT_CHECK(units == -1 || units == 0 || units == 1 || units == 2 || units == 4,
            "set_gemv_row1_units: {} (-1 environment, 0 auto, 1, 2 or 4 units a warp)", units);
  gemv_detail::row1_units_override = units;
}

int64_t gemv_row1_launches() { return gemv_detail::row1_launches.load(std::memory_order_relaxed); }

}  // namespace grt::cuda
