// linear for decode-shaped x (M <= 16 rows; 17..64 rows: gemv_wide.cu, 1-2 rows of bf16: gemv_row1.cu,
// 3-16 rows of bf16: gemv_rows.cu, whose entry points also make): out[M, N] = x[M, K] · w[N, K]ᵀ
// (+ bias). Reading w is all the work, so the kernel streams it exactly once with 16-byte loads that
// skip L1 (x, which every block rereads, keeps L1), and multiplies on the tensor cores (mma
// m16n8k16, f32 accumulation), where the M rows cost nothing.
//
// Work split. A block (8 warps) owns a tile of 32 output columns (rows of w). K is cut into groups
// of 64; the block's warps — and, on sm_90, the C blocks of a thread block cluster (C = 1..8, so
// that a small N still covers every SM) — take the groups round-robin. Each warp sums its groups
// in registers; the warps' sums meet in shared memory, the cluster's in distributed shared memory
// (no scratch buffer, no atomics). The grid is at most two blocks per SM, which the launch bounds
// keep resident, so it runs in one wave.
//
// Fragments straight from 16-byte loads. Per mma, A = 16 rows of w x 16 k and B = 16 k x 8 rows of
// x (B's columns are x's rows). Lane (g = lane / 4, t = lane % 4) holds A's k = {2t, 2t+1, 2t+8,
// 2t+9} of rows g and g+8 and B's same k of column g. A dot product may visit k in any order, so
// these four logical k stand for four consecutive elements of what lane t loaded, the same in A
// and B: one 16-byte load (8 elements) of a row of w, or of x, feeds two mmas with no shuffles.
//
// Determinism and row independence. Every step of the sum of output (m, n) is fixed by N, K and
// the GPU (SM count, cluster support), never by M or by other rows: which warp of which block
// takes which k, the order of a warp's groups, the mma (its output column m reads only x row m),
// the warp order in shared memory, the cluster rank order, then the bias add and the rounding. M
// only decides which rows of x are loaded (the others are zeros) and which outputs are stored; the
// second column tile (rows 8..15) adds mmas on other accumulators. So row r is bit-identical for
// M = 3 or M = 4 with a padding row (decode graphs pad batches), and from run to run, for every
// M of 1..16 (17..64 rows run gemv_wide.cu's split: bits per class, see there). 1 and 2 rows of
// bf16 run gemv_row1.cu's kernel where it takes the shape (K <= 3072): a class of their own; 3..16
// rows of bf16 run gemv_rows.cu's where it takes the shape (the shape alone decides): another class.
//
// Programmatic dependent launch (ops/cuda/pdl.cuh). Launched while the previous kernel still
// runs, a warp loads its first group of w into registers and asks its next few into L2 (or, in
// the staged norm kernels, copies all its groups into shared memory), then waits for x. w is never written by the forward, so this overlaps the weight stream with the
// predecessor's tail and the launch; the sums are the same.
// For weights of at most 32 MiB (early_trigger) the kernel lets the next kernel launch right after
// its own pdl_wait (else after its main loop, as before), so that the next GEMV's blocks, which fit beside ours (82-109
// registers x 256 threads, at most 2 of our blocks per SM), load their weights while ours stream.
//
// Decode fusions (gemv_fused.h, ops/fused_linear.h), each one flag of the same kernel, none
// changing a sum: an RMSNorm prologue (every block computes the rows' inverse RMS itself and
// normalizes x as it loads it, rounded as rms_norm rounds), a residual epilogue (residual +=
// the rounded output), and a silu_and_mul epilogue (a tile takes 16 gate rows and the matching
// 16 up rows of the fused gate_up weight, so both halves of an output meet in one block).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>

#include "core/env_switch.h"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gemv.h"
#include "ops/cuda/gemv_common.cuh"
#include "ops/cuda/gemv_fused.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace gemv_detail {

DeviceInfo device_info(int index) {
  static std::mutex mu;
  static std::map<int, DeviceInfo> infos;
  std::lock_guard<std::mutex> lock(mu);
  DeviceInfo& info = infos[index];
  if (info.sms == 0) {
    int major = 0, cluster_launch = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index),
                   "reading the compute capability of cuda:{}", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, index),
                   "reading cluster support of cuda:{}", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.sms, cudaDevAttrMultiProcessorCount, index),
                   "reading the SM count of cuda:{}", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.l2_bytes, cudaDevAttrL2CacheSize, index),
                   "reading the L2 size of cuda:{}", index);
    info.clusters = major >= 9 && cluster_launch != 0;  // the sm_80 build has no cluster code
  }
  return info;
}

}  // namespace gemv_detail

namespace {

namespace cg = cooperative_groups;
using namespace gemv_detail;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileN = 32;                 // output columns per block: two mma row tiles of 16
constexpr int kStepK = 32;                 // k per pair of mmas: 4 lanes x 8 elements
constexpr int kUnroll = 2;                 // steps per group: a lane has 2 x 4 w loads in flight
constexpr int kGroupK = kStepK * kUnroll;  // 64
constexpr int kMaxCluster = 8;             // the portable cluster size
constexpr int kLd = kTileN + 4;            // padded reduction row: the lanes' stores hit 32 banks
static_assert(kWarps == 8, "the norm prologue gives warp w the rows w and w + 8");

// The lane's 16-byte pieces of w for group `grp` (zeros past K or for rows past N).
template <typename T>
__device__ __forceinline__ void load_weights(const T* const (&wr)[4], const bool (&wok)[4], int grp, int K, int t,
                                             uint4 (&a)[kUnroll][4]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int k = grp * kGroupK + u * kStepK + t * 8;
#pragma unroll
    for (int j = 0; j < 4; ++j) a[u][j] = k < K && wok[j] ? load_weight(wr[j] + k) : make_uint4(0, 0, 0, 0);
  }
}

// Staged weights (the STAGE kernels): the lane's 16-byte pieces of w for group `grp`, in
// load_weights' order, copied into its own slots of shared memory (slot (u * 4 + j) * 32 + lane
// from `dst`, so a warp's stores and loads hit 32 banks) by cp.async; pieces past K or of rows past
// N are zero-filled (src-size 0 reads nothing). Only this lane reads them back, after its own
// cp.async.wait_group: no barrier.
template <typename T>
__device__ __forceinline__ void stage_weights(const T* const (&wr)[4], const bool (&wok)[4], int grp, int K, int t,
                                              int lane, uint4* dst) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int k = grp * kGroupK + u * kStepK + t * 8;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool ok = k < K && wok[j];
      cp_async16(static_cast<uint32_t>(__cvta_generic_to_shared(dst + (u * 4 + j) * 32 + lane)), ok ? wr[j] + k : wr[j],
                 ok);
    }
  }
}
// Shared memory of one staged group of a warp: kUnroll x 4 pieces of 16 bytes a lane.
constexpr int kStageSlot = kUnroll * 4 * 32;  // uint4s
constexpr int kMaxStageGroups = 2;            // a warp's groups the STAGE kernels take at most (64 KB a block)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Cluster push (sm_90): shared::cluster addresses from mapa and 4-byte stores that count their
// bytes on the receiving block's mbarrier (the mbarrier itself: bulk_copy.cuh).
__device__ __forceinline__ uint32_t cluster_addr(const void* p, int rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(out)
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))), "r"(rank));
  return out;
}
__device__ __forceinline__ void push_float(uint32_t addr, float v, uint32_t bar) {
  asm volatile("st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr),
               "r"(__float_as_uint(v)), "r"(bar)
               : "memory");
}
#endif

// Cluster push's shared memory: rank q's sums of the E outputs' share this block stores at
// recv[q * E / C + j], and the mbarrier that counts their bytes (nothing without PUSH).
template <bool PUSH, int E>
struct PushSmem {
  float recv[E];
  alignas(8) uint64_t bar;
};
template <int E>
struct PushSmem<false, E> {};

// Output element e of the block's tile (row e / kTileN, column n0 + e % kTileN) from its sum.
__device__ __forceinline__ void store(const Params& p, int64_t n0, int e, float s) {
  store_out(p, e / kTileN, n0 + e % kTileN, s);
}

// NORM: the rows of x are RMSNorm'ed (p.norm_w, p.eps) as they are loaded. Each block computes
// the inverse RMS of every row itself (a warp per row, lanes over 16-byte chunks in a fixed
// order, then a butterfly): the same bits in every block and for every M, since a row's sum
// reads only that row. By default (p.norm_one_pass) a warp's rows are summed in one pass with all
// their loads in flight, and the norm weight of its first group is read before pdl_wait.
// PACKED: x * inv and w * x are rounded a pair at a time (norm_pair_packed), the same bits.
// OCC: blocks an SM the registers must allow (2: up to 128 a thread; 3: up to 80, so a block of the
// next kernel, e.g. the decode attention's 128 x 168, can land beside two of these; see gemv_occ).
// PUSH ("Cluster push" below; clusters without silu, sm_90): each block pushes the sums of the
// outputs other blocks store straight into their shared memory and leaves, instead of the owners
// pulling them between two cluster barriers. The same sums in the same order: the same bits.
// STAGE ("Staged weights"; packed-norm kernels whose warps have at most kMaxStageGroups groups):
// instead of the first group in registers and the next ones asked into L2, every group of the
// warp is copied into shared memory before pdl_wait, so no weight is held in registers across the
// wait (80 registers: 3 blocks an SM fit without spills) and none is read from L2 after it. The
// same a values in the same order: the same bits.
template <typename T, int NT, bool NORM, bool PACKED, int OCC, bool PUSH = false, bool STAGE = false>
__global__ void __launch_bounds__(kThreads, OCC) gemv_kernel(Params p) {
  extern __shared__ uint4 gemv_staged[];  // STAGE: [warp][staged group][kStageSlot]
  __shared__ float red[kWarps][NT * 8 * kLd];
  __shared__ float inv_rms[NT * 8];
  constexpr int E = NT * 8 * kTileN;  // outputs of the tile, row-major over (row of x, column)
  __shared__ PushSmem<PUSH, E> ps;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int C = p.cluster;
  const int rank = static_cast<int>(blockIdx.x % C);
  const int64_t tile = blockIdx.x / C;
  const int64_t n0 = tile * kTileN;
  const int inter = p.silu_inter;
  // Row of w of tile column i (0..31): n0 + i, or with silu gate row tile*16 + i (i < 16) and up
  // row inter + tile*16 + i - 16; -1 past the weight.
  const auto w_row = [&](int i) -> int64_t {
    if (inter > 0) {
      const int64_t c = tile * 16 + (i & 15);
      return c < inter ? (i >= 16 ? inter + c : c) : -1;
    }
    return n0 + i < p.N ? n0 + i : -1;
  };

  // The lane's rows of w (n0 + 8j + g; j = 2r + h is row tile r, half h) and of x (8h + g).
  const T* wr[4];
  bool wok[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t n = w_row(8 * j + g);
    wok[j] = n >= 0;
    wr[j] = static_cast<const T*>(p.w) + (wok[j] ? n : 0) * p.K;
  }
  const T* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int h = 0; h < NT; ++h) {
    const int m = 8 * h + g;
    xok[h] = m < p.M;
    xr[h] = static_cast<const T*>(p.x) + (xok[h] ? m : 0) * p.x_stride;
  }

  const int stride = C * kWarps, first = rank * kWarps + warp;
  // Before pdl_wait (ops/cuda/pdl.cuh): weights only. The warp's first group goes to registers
  // and its next p.prefetch groups to L2 (lane l: row n0 + l) while the predecessor still runs;
  // STAGE: all its groups to shared memory.
  uint4 a[kUnroll][4];
  uint4* const staged = gemv_staged + warp * p.stage_groups * kStageSlot;
  if constexpr (STAGE) {
    for (int s = 0, grp = first; grp < p.groups; ++s, grp += stride)
      stage_weights<T>(wr, wok, grp, p.K, t, lane, staged + s * kStageSlot);
    cp_async_commit();
  } else {
    load_weights<T>(wr, wok, first, p.K, t, a);
  }
  const int64_t pf_row = STAGE ? -1 : w_row(lane);  // STAGE: every group is in shared memory
  if (pf_row >= 0)
    for (int j = 1; j <= p.prefetch; ++j) {
      const int64_t k = static_cast<int64_t>(first + j * stride) * kGroupK;
      if (k >= p.K) break;
      prefetch_l2(static_cast<const T*>(p.w) + pf_row * p.K + k);
    }
  // One-pass prologue: norm_w of the warp's first group is a weight too (never written by the
  // forward), so it is read before pdl_wait, off the path after it.
  uint4 wn_first[kUnroll];
  if constexpr (NORM) {
    if (p.norm_one_pass) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int k = first * kGroupK + u * kStepK + t * 8;
        wn_first[u] = k < p.K ? __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(p.norm_w) + k))
                              : make_uint4(0, 0, 0, 0);
      }
    }
  }
  // Cluster push: the receiving mbarrier expects 4 bytes from every rank for each of this block's
  // outputs that exist (rows < M, columns < N: E / C of the tile from rank * E / C); it is set up
  // once the weights are asked for, and made visible to the cluster by the arrive half of a split
  // cluster barrier (relaxed: fence.mbarrier_init orders the set-up, nothing else needs ordering).
  if constexpr (PUSH) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
      const int per = E / C;
      uint32_t real = 0;
      for (int j = 0; j < per; ++j) {
        const int e = rank * per + j;
        real += e / kTileN < p.M && n0 + e % kTileN < p.N ? 1u : 0u;
      }
      tma::mbar_init(&ps.bar, 1);  // (with fence.mbarrier_init: visible to the cluster's stores)
      tma::mbar_arrive_expect_tx(&ps.bar, real * 4u * C);
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
  }
  pdl_wait();
  if (p.early_trigger) pdl_trigger();  // the next kernel's blocks stream their weights beside ours

  float inv[NT] = {};
  if constexpr (NORM) {
    if (p.norm_one_pass) {
      // The warp's rows (warp, and warp + 8 when NT = 2) in one pass: every load of both rows is in
      // flight together (one L2 round trip at K <= 1024, where row by row took one a row). Each row
      // still adds its chunks in the order of the loop below, and a chunk past K or of a row past M
      // is zeros, which leave the sum's bits as they are: the same inverse RMS.
      constexpr int kChunks = 4;  // 16-byte chunks a lane and row in flight
      const T* rows[NT];
      bool ok[NT];
#pragma unroll
      for (int r = 0; r < NT; ++r) {
        ok[r] = warp + 8 * r < p.M;
        rows[r] = static_cast<const T*>(p.x) + (ok[r] ? warp + 8 * r : 0) * p.x_stride;
      }
      float ss[NT] = {};
      for (int k0 = lane * 8; k0 < p.K; k0 += 32 * 8 * kChunks) {
        uint4 v[kChunks][NT];
#pragma unroll
        for (int j = 0; j < kChunks; ++j)
#pragma unroll
          for (int r = 0; r < NT; ++r) {
            const int k = k0 + 32 * 8 * j;
            v[j][r] = ok[r] && k < p.K ? __ldg(reinterpret_cast<const uint4*>(rows[r] + k)) : make_uint4(0, 0, 0, 0);
          }
#pragma unroll
        for (int j = 0; j < kChunks; ++j)
#pragma unroll
          for (int r = 0; r < NT; ++r) ss[r] = add_squares<T>(ss[r], v[j][r]);
      }
#pragma unroll
      for (int r = 0; r < NT; ++r) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss[r] += __shfl_xor_sync(0xffffffffu, ss[r], o);
        if (lane == 0) inv_rms[warp + 8 * r] = rsqrtf(ss[r] / static_cast<float>(p.K) + p.eps);
      }
    } else {
      for (int m = warp; m < NT * 8; m += kWarps) {
        float ss = 0.0f;
        if (m < p.M) {
          const T* row = static_cast<const T*>(p.x) + m * p.x_stride;
          for (int k = lane * 8; k < p.K; k += 32 * 8) {
            ss = add_squares<T>(ss, __ldg(reinterpret_cast<const uint4*>(row + k)));
          }
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        }
        if (lane == 0) inv_rms[m] = rsqrtf(ss / static_cast<float>(p.K) + p.eps);
      }
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < NT; ++h) inv[h] = inv_rms[8 * h + g];
  }

  float acc[2][NT][4] = {};
  for (int grp = first, s = 0; grp < p.groups; grp += stride, ++s) {
    if constexpr (STAGE) {
      if (s == 0) cp_async_wait<0>();  // this lane's copies
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < 4; ++j) a[u][j] = staged[s * kStageSlot + (u * 4 + j) * 32 + lane];
    } else if (grp != first) {
      load_weights<T>(wr, wok, grp, p.K, t, a);
    }
    // x after w, so that all loads of the group are in flight together; past K they are zeros.
    uint4 b[kUnroll][NT];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = grp * kGroupK + u * kStepK + t * 8;
#pragma unroll
      for (int h = 0; h < NT; ++h)
        b[u][h] = k < p.K && xok[h] ? __ldg(reinterpret_cast<const uint4*>(xr[h] + k)) : make_uint4(0, 0, 0, 0);
      if constexpr (NORM) {
        if (k < p.K) {
          uint4 wn;
          if (p.norm_one_pass && grp == first) wn = wn_first[u];
          else wn = __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(p.norm_w) + k));
#pragma unroll
          for (int h = 0; h < NT; ++h)
            if (xok[h]) b[u][h] = norm_chunk<T, PACKED>(b[u][h], wn, inv[h]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int h = 0; h < NT; ++h) {
          // Elements 0-3 of the lane's 16 bytes, then 4-7 (A regs: row g, row g+8, row g hi, row g+8 hi).
          mma<T>(acc[r][h], a[u][2 * r].x, a[u][2 * r + 1].x, a[u][2 * r].y, a[u][2 * r + 1].y, b[u][h].x, b[u][h].y);
          mma<T>(acc[r][h], a[u][2 * r].z, a[u][2 * r + 1].z, a[u][2 * r].w, a[u][2 * r + 1].w, b[u][h].z, b[u][h].w);
        }
  }
  if (!p.early_trigger) pdl_trigger();  // weights all read: the next kernel may start its own prologue

  // Accumulator i of tile (r, h) is column r*16 + g (+8 for i >= 2) of x row 8h + 2t (+1 for odd i).
  float* mine = red[warp];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < NT; ++h) {
      const int col = r * 16 + g, m = 8 * h + 2 * t;
      mine[m * kLd + col] = acc[r][h][0];
      mine[(m + 1) * kLd + col] = acc[r][h][1];
      mine[m * kLd + col + 8] = acc[r][h][2];
      mine[(m + 1) * kLd + col + 8] = acc[r][h][3];
    }
  __syncthreads();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Cluster push: every rank's mbarrier is set up (the wait half of the split barrier, whose arrive
  // half ran before the weights: it returns at once unless a block is that far behind).
  if constexpr (PUSH) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
  for (int e = threadIdx.x; e < E; e += kThreads) {
    const int i = (e / kTileN) * kLd + e % kTileN;
    float s = red[0][i];
#pragma unroll
    for (int v = 1; v < kWarps; ++v) s += red[v][i];
    if constexpr (PUSH) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      // To the block that stores output e (rank q stores [q * per, (q + 1) * per)), slot `rank`.
      const int per = E / C, q = e / per;
      if (e / kTileN < p.M && n0 + e % kTileN < p.N)
        push_float(cluster_addr(&ps.recv[rank * per + e - q * per], q), s, cluster_addr(&ps.bar, q));
#endif
    } else if (C == 1 && inter == 0) {
      store(p, n0, e, s);
    } else {
      red[0][i] = s;  // only this thread touches element i: no barrier before the cluster's
    }
  }
  if (C == 1 && inter > 0) {
    __syncthreads();  // a gate sum and its up sum were added by different threads
    for (int e = threadIdx.x; e < E / 2; e += kThreads) {
      const float* gs = &red[0][(e / 16) * kLd + e % 16];
      store_silu<T>(p, e / 16, tile * 16 + e % 16, gs[0], gs[16]);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Cluster push: the block waits for every rank's sums of its outputs (their bytes on its
  // mbarrier), adds them in rank order (the pull's order below: the same bits) and stores. No
  // block reads another's memory after this, so none waits for the others to leave. One output a
  // thread: E / C <= kThreads.
  if constexpr (PUSH) {
    const int per = E / C;
    tma::mbar_wait<true>(&ps.bar, 0);
    const int j = static_cast<int>(threadIdx.x), e = rank * per + j;
    if (j < per && e / kTileN < p.M && n0 + e % kTileN < p.N) {
      float s = ps.recv[j];
      for (int q = 1; q < C; ++q) s += ps.recv[q * per + j];
      store(p, n0, e, s);
    }
    return;
  }
  if (C > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's partial sums are in its red[0]
    const int per = (inter > 0 ? E / 2 : E) / C;
    for (int e = rank * per + static_cast<int>(threadIdx.x); e < (rank + 1) * per; e += kThreads) {
      if (inter > 0) {
        float* own = &red[0][(e / 16) * kLd + e % 16];
        float sg = *cluster.map_shared_rank(own, 0), su = *cluster.map_shared_rank(own + 16, 0);
        for (int q = 1; q < C; ++q) {
          sg += *cluster.map_shared_rank(own, q);
          su += *cluster.map_shared_rank(own + 16, q);
        }
        store_silu<T>(p, e / 16, tile * 16 + e % 16, sg, su);
        continue;
      }
      float* own = &red[0][(e / kTileN) * kLd + e % kTileN];
      float s = *cluster.map_shared_rank(own, 0);
      for (int q = 1; q < C; ++q) s += *cluster.map_shared_rank(own, q);
      store(p, n0, e, s);
    }
    cluster.sync();  // this block's shared memory stays until the others have read it
  }
#endif
}

// Blocks per column tile: doubled while the grid stays within two blocks per SM (one wave) and
// every warp of the cluster still gets a group of K. Depends on N, K and the GPU only, never on
// M: it fixes the summation order (see the top of the file).
int cluster_size(int64_t tiles, int64_t groups, const DeviceInfo& info) {
  int c = 1;
  while (info.clusters && c < kMaxCluster && tiles * c <= info.sms && groups >= 2 * c * kWarps) c *= 2;
  return c;
}

int kind_of(DType dt) {
  switch (dt) {
    case DType::F32: return kF32;
    case DType::BF16: return kBF16;
    case DType::F16: return kF16;
    default: return kNone;
  }
}

// Groups per warp, after its first, that the resident blocks ask into L2 before pdl_wait: at most
// a quarter of the L2 in all (the predecessor's data and the KV cache keep the rest), and none
// past the warp's share of K.
int prefetch_groups(int64_t blocks, int64_t groups, int cluster, const DeviceInfo& info) {
  const int64_t resident = std::min<int64_t>(blocks, 2 * static_cast<int64_t>(info.sms));
  const int64_t per_group = resident * kWarps * kTileN * kGroupK * 2;  // bytes of one group per warp, grid-wide
  const int64_t by_l2 = info.l2_bytes / 4 / std::max<int64_t>(per_group, 1);
  const int64_t per_warp = (groups + cluster * kWarps - 1) / (cluster * kWarps);
  return static_cast<int>(std::clamp<int64_t>(std::min(by_l2, per_warp - 1), 0, 8));
}

// Register budget of the one-tile kernels (NT = 1: up to 8 rows; gemv_kernel's OCC): 2 blocks an
// SM (up to 128 registers; 100 with the norm prologue, 82 without) or 3 (at most 80: no spills
// without the norm prologue, 24-32 bytes a thread with it). Two blocks of 256 x 82..100 registers
// fill an SM's register file, so where the grid has more blocks than SMs, those landing beside the
// previous kernel's block (the decode attention's 128 x 168) find room for one only and the rest
// land as it leaves; at 80, two fit beside it and read their weights before the wait.
// GRAPHRT_GEMV_OCC=auto (default): 3 for the kernels without the norm prologue whose grid is wider
// than the SMs and whose weights take the early trigger (at most kEarlyTriggerMaxBytes), else 2;
// =2 / =3 every NT = 1 kernel. Read once; set_gemv_occ overrides it (tests). The same bits.
// Measured (H100, bench/results/h100_2026-11-24_s14_occ, two rounds, graph ms): 3 everywhere:
// qwen3-30b-a3b bs 1 3.720 / 3.720 -> 3.634 / 3.632 (its o_proj, 256 blocks after the attention's
// 64: advance 9.22 -> 6.91 us a layer), but qwen3-0.6b bs 1 1.032 -> 1.10, bs 8 1.59 -> 1.78,
// llama-3.1-8b bs 1 5.80 -> 6.03 (spills and lm_head); without the norm prologue only: qwen bs 1
// 1.073, llama 6.03, the MoE 3.650. The rule takes the MoE's qkv and o_proj and none of the dense
// presets' kernels (qwen's o_proj / down: 128 blocks; qkv / gate_up: norm prologue; llama's o_proj,
// down and every lm_head: > 32 MB). auto against 2 (call I): qwen3-30b-a3b bs 1 3.713 -> 3.683,
// bs 8 12.85 -> 12.79; qwen3-0.6b equal.
constexpr int64_t kEarlyTriggerMaxBytes = 32ll << 20;
int occ_override = -1;  // set_gemv_occ: -1 the environment, 0 auto, 2, 3
int gemv_occ(bool norm, int64_t blocks, int64_t weight_bytes, int sms) {
  static const int mode = std::array<int, 3>{0, 2, 3}[static_cast<size_t>(env_choice("GRAPHRT_GEMV_OCC", {"auto", "2", "3"}, 0))];
  const int m = occ_override >= 0 ? occ_override : mode;
  if (m != 0) return m;
  return !norm && blocks > sms && weight_bytes <= kEarlyTriggerMaxBytes ? 3 : 2;
}

// Once per STAGE kernel and device: the dynamic shared memory it may take (above the default 48 KB).
// The carveout stays the driver's choice: asking every small-M kernel (and the decode attention)
// for the largest shared-memory carveout cost +0.09 ms at qwen3-0.6b bs 1 (session 19 calls B, C:
// SMs reconfigured between kernels, lm_head's x reads with an L1 of 28 KB 103 -> 126 us).
void configure_staged(int index, const void* kernel) {
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, bool> done;
  std::lock_guard<std::mutex> lock(mu);
  if (!done.emplace(std::make_pair(index, kernel), true).second) return;
  constexpr int bytes = kMaxStageGroups * kWarps * kStageSlot * 16;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                 "allowing {} bytes of shared memory for the staged small-M linear on cuda:{}", bytes, index);
}

// occ: gemv_occ's choice (used by the NT = 1 kernels only).
template <typename T, int NT, bool NORM, bool PACKED = false>
void launch(int index, cudaStream_t stream, const Params& p, int64_t blocks, int occ) {
  auto kernel = gemv_kernel<T, NT, NORM, PACKED, 2>;
  if constexpr (NT == 1)
    if (occ == 3) kernel = gemv_kernel<T, NT, NORM, PACKED, 3>;
  // Cluster push: the plain one-tile kernels (o_proj and down at decode) only.
  if constexpr (NT == 1 && !NORM && !PACKED)
    if (p.cluster_push) kernel = occ == 3 ? gemv_kernel<T, 1, false, false, 3, true> : gemv_kernel<T, 1, false, false, 2, true>;
  // Staged weights: the packed-norm kernels only (the default norm path).
  size_t smem = 0;
  if constexpr (NORM && PACKED)
    if (p.stage_groups > 0) {
      kernel = gemv_kernel<T, NT, true, true, 2, false, true>;
      if constexpr (NT == 1)
        if (occ == 3) kernel = gemv_kernel<T, 1, true, true, 3, false, true>;
      smem = static_cast<size_t>(p.stage_groups) * kWarps * kStageSlot * 16;
    }
  if (smem > 0) configure_staged(index, reinterpret_cast<const void*>(kernel));
  (void)launch_pdl(index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), smem, stream,
                    static_cast<unsigned>(p.cluster), p);  // its error is also the last error, checked next
}

// The NORM kernels' normalization of x (norm_chunk): 1 = both roundings of a pair of elements in
// one packed conversion, 0 = one conversion an element (sessions 4-12). GRAPHRT_GEMV_NORM_PACKED=0|1,
// read once; set_gemv_norm_packed overrides it (tests). Both give the same bits. Default 1: ptxas
// turned 16-32 of the per-element roundings into F2F (the slow conversion unit), the packed form
// none (SASS, bf16: 54 -> 22 F2F at 9..16 rows); on the H100 (session 13) within the spread at
// qwen3-0.6b (bs 8 / 12 -0.005 / -0.003 ms, bs 1 and prefill equal), qwen3-30b-a3b bs 1 -0.03 (1 round).
// So the 9..16-row penalty (+~1 us a NORM kernel, ncu: +46% instructions a warp) is not these.
int norm_packed_override = -1;
bool norm_packed() {
  static const int mode = env_choice("GRAPHRT_GEMV_NORM_PACKED", {"0", "1"}, 1);
  return (norm_packed_override >= 0 ? norm_packed_override : mode) == 1;
}

template <typename T>
void launch_rows(int index, cudaStream_t stream, const Params& p, int64_t blocks, bool two, int occ) {
  if (p.norm_w && norm_packed()) {
    if (two) launch<T, 2, true, true>(index, stream, p, blocks, occ);
    else launch<T, 1, true, true>(index, stream, p, blocks, occ);
  } else if (p.norm_w) {
    if (two) launch<T, 2, true>(index, stream, p, blocks, occ);
    else launch<T, 1, true>(index, stream, p, blocks, occ);
  } else {
    if (two) launch<T, 2, false>(index, stream, p, blocks, occ);
    else launch<T, 1, false>(index, stream, p, blocks, occ);
  }
}

// Whether the next kernel may launch right after this GEMV's pdl_wait (else after its main loop,
// the old edge). By default only for weights of at most kEarlyTriggerMaxBytes: the next GEMV's
// early blocks stream their weights beside this one's, which pays while both fit in L2 beside
// each other (qwen3-0.6b: 4-13 MB, bs 1 -0.02 ms on the H100) and costs where they evict each
// other (llama-3.1-8b: 34-235 MB, bs 1 +0.08 ms). GRAPHRT_GEMV_EARLY_TRIGGER=0: never, =1: always.
bool early_trigger(int64_t weight_bytes) {
  // -1 by size, 0 never, 1 always; read once
  static const int mode = env_choice("GRAPHRT_GEMV_EARLY_TRIGGER", {"0", "1"}, -1);
  return mode < 0 ? weight_bytes <= kEarlyTriggerMaxBytes : mode == 1;
}

// The RMSNorm prologue of the NORM kernels: 1 = one pass over the warp's rows with norm_w's first
// group read before pdl_wait, 0 = row by row (sessions 4-12). GRAPHRT_GEMV_NORM_ONE_PASS=0|1, read
// once; set_gemv_norm_one_pass overrides it (tests). Both give the same bits. Default 1: on the
// H100 (session 13, two calls, 2 rounds each, bench/results/h100_2026-11-24_s13_norm) qwen3-0.6b
// decode at ctx 16 bs 1 / 8 / 12 / 16 -0.016 / -0.011 / -0.026 / -0.035 ms, prefill 16 tokens
// (rows) -0.02, bs 1 at ctx 1024 -0.01, qwen3-30b-a3b bs 1 -0.04 (1 round).
int norm_one_pass_override = -1;
int norm_one_pass() {
  static const int mode = env_choice("GRAPHRT_GEMV_NORM_ONE_PASS", {"0", "1"}, 1);
  return norm_one_pass_override >= 0 ? norm_one_pass_override : mode;
}

// How a cluster's blocks combine their sums ("Cluster push" in gemv_kernel), for the plain
// one-tile kernels (1..8 rows, no norm prologue, no silu: o_proj and down at decode) with a
// cluster: 1 (default) = every block pushes the sums of the outputs other blocks store into their
// shared memory and leaves; 0 = the owners pull them between two cluster barriers (sessions
// 4-17). GRAPHRT_GEMV_CLUSTER_PUSH=0|1, read once; set_gemv_cluster_push overrides it (tests).
// The same bits either way.
// Measured (H100, bench/results/h100_2026-11-25_session18, calls F-J, graph ms, ABBA rounds in
// fresh processes): in-kernel marks put the pull's two barriers at 2.7 of o_proj's / down's ~5 us
// in qwen3-0.6b's step, the push at 1.0. Push 1 against 0 (calls I, J): llama-3.1-8b bs 1 5.865 ->
// 5.799, qwen3-0.6b bs 1 1.023 -> 1.009 and 1.036 -> 1.012, bs 8 1.570 -> 1.561 and 1.600 ->
// 1.567, qwen3-30b-a3b bs 1 3.638 -> 3.588; prefill of 4 / 16 / 64 tokens 0.948 / 1.076 / 1.406
// -> 0.957 / 1.076 / 1.416 (16 and 64 run other kernels: the spread). Set-up matters: with the
// mbarrier set up and the cluster barrier's (release) arrive at the kernel's start, before the
// weight loads, the push lost (qwen bs 1 +0.085 ms, call H).
int cluster_push_override = -1;  // -1 the environment, 0 pull, 1 push
bool cluster_push() {
  static const int mode = env_choice("GRAPHRT_GEMV_CLUSTER_PUSH", {"0", "1"}, 1);
  return (cluster_push_override >= 0 ? cluster_push_override : mode) == 1;
}

// Staged weights ("Staged weights" in gemv_kernel) for the packed-norm kernels (qkv and gate_up at
// decode) whose warps have at most kMaxStageGroups groups of K: GRAPHRT_GEMV_STAGE=0 (the first
// group in registers, the next in L2; sessions 4-18), 2 (staged, 2 blocks an SM), 3 (default:
// staged, one-tile kernels at 3 blocks an SM), read once; set_gemv_stage overrides it (tests). The
// same bits whichever. Only small models take it (qwen3-0.6b's qkv and gate_up: 1 and 2 groups a
// warp; llama-3.1-8b's and qwen3-30b-a3b's have 4-8, which would need 128-256 KB a block).
// Measured (H100, bench/results/h100_2026-11-25_session19, calls B-D, six interleaved fresh
// processes each, graph ms, 3 against 0): qwen3-0.6b bs 1 (ctx 1024) 1.012 / 1.009 (equal), bs 8
// 1.541 / 1.555, prefill of 4 tokens 0.928 / 0.961, of 16 1.079 / 1.085. Staging only the first
// group so that every gate_up block lands beside o_proj's at once lost (bs 1 +0.04): the landing
// was not what gate_up waited for.
int stage_override = -1;  // -1 the environment, else 0, 2, 3
int gemv_stage() {
  static const int mode = std::array<int, 3>{0, 2, 3}[static_cast<size_t>(env_choice("GRAPHRT_GEMV_STAGE", {"0", "2", "3"}, 2))];
  return stage_override >= 0 ? stage_override : mode;
}

// The decode fusions of one launch (all off: plain linear).
struct Fusion {
  const void* norm_w = nullptr;
  float eps = 0.0f;
  void* residual = nullptr;
  int64_t res_stride = 0;
  int64_t silu_inter = 0;
};

// The launch behind every entry point, once its arguments are known to fit.
void run_small_m(Device d, cudaStream_t stream, const void* x, int64_t x_stride, DType in_dtype, const void* w,
                 const void* bias, DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K,
                 const Fusion& f = {}) {
  const void* norm_w = f.norm_w;
  void* residual = f.residual;
  const DeviceInfo info = device_info(d.index);
  const int64_t tiles = (N + kTileN - 1) / kTileN;
  const int64_t groups = (K + kGroupK - 1) / kGroupK;
  Params p{};
  p.x = x;
  p.w = w;
  p.bias = bias;
  p.out = out;
  p.x_stride = x_stride;
  p.M = static_cast<int>(M);
  p.N = static_cast<int>(N);
  p.K = static_cast<int>(K);
  p.groups = static_cast<int>(groups);
  p.cluster = cluster_size(tiles, groups, info);
  p.bias_kind = bias ? kind_of(bias_dtype) : kNone;
  p.out_kind = kind_of(out_dtype);
  p.norm_w = norm_w;
  p.eps = f.eps;
  p.residual = residual;
  p.res_stride = f.res_stride;
  p.silu_inter = static_cast<int>(f.silu_inter);
  p.early_trigger = early_trigger(N * K * static_cast<int64_t>(dtype_size(in_dtype))) ? 1 : 0;
  p.norm_one_pass = norm_w ? norm_one_pass() : 0;
  if (M <= 2 && launch_row1(d.index, stream, p, in_dtype == DType::BF16, info)) {
    GRT_CUDA_CHECK_LAUNCH("linear (warp a row{}{}{}) M={} N={} K={} {} -> {}", norm_w ? ", rms_norm prologue" : "",
                          residual ? ", residual epilogue" : "", f.silu_inter ? ", silu_and_mul epilogue" : "", M, N,
                          K, dtype_name(in_dtype), dtype_name(out_dtype));
    return;
  }
  if (M <= kGemvMaxRows && launch_rows(d.index, stream, p, in_dtype == DType::BF16, info)) {
    GRT_CUDA_CHECK_LAUNCH("linear (whole columns a block{}{}{}) M={} N={} K={} {} -> {}",
                          norm_w ? ", rms_norm prologue" : "", residual ? ", residual epilogue" : "",
                          f.silu_inter ? ", silu_and_mul epilogue" : "", M, N, K, dtype_name(in_dtype),
                          dtype_name(out_dtype));
    return;
  }
  if (M > kGemvMaxRows) {  // 17..64 rows: the wide kernel, its own split (gemv_wide.cu)
    launch_wide(d.index, stream, p, in_dtype == DType::BF16, info);
    GRT_CUDA_CHECK_LAUNCH("linear (wide small M{}{}{}) M={} N={} K={} {} -> {}", norm_w ? ", rms_norm prologue" : "",
                          residual ? ", residual epilogue" : "", f.silu_inter ? ", silu_and_mul epilogue" : "", M, N,
                          K, dtype_name(in_dtype), dtype_name(out_dtype));
    return;
  }
  const int64_t blocks = tiles * p.cluster;
  p.prefetch = prefetch_groups(blocks, groups, p.cluster, info);
  int occ = gemv_occ(norm_w != nullptr, blocks, N * K * static_cast<int64_t>(dtype_size(in_dtype)), info.sms);
  const int64_t per_warp = (groups + p.cluster * kWarps - 1) / (p.cluster * kWarps);
  const int stage = gemv_stage();
  if (stage != 0 && norm_w && norm_packed() && per_warp <= kMaxStageGroups) {
    p.stage_groups = static_cast<int>(per_warp);
    p.prefetch = 0;
    if (stage == 3) occ = 3;
  }
  p.cluster_push = p.cluster > 1 && !norm_w && f.silu_inter == 0 && M <= 8 && cluster_push() ? 1 : 0;
  if (in_dtype == DType::BF16) launch_rows<__nv_bfloat16>(d.index, stream, p, blocks, M > 8, occ);
  else launch_rows<__half>(d.index, stream, p, blocks, M > 8, occ);
  GRT_CUDA_CHECK_LAUNCH("linear (small M{}{}{}) M={} N={} K={} {} -> {} cluster {}{}", norm_w ? ", rms_norm prologue" : "",
                        residual ? ", residual epilogue" : "", f.silu_inter ? ", silu_and_mul epilogue" : "", M, N, K, dtype_name(in_dtype), dtype_name(out_dtype),
                        p.cluster, p.cluster_push ? " (push)" : "");
}

}  // namespace

int64_t gemv_max_rows() {
  static const int64_t rows = [] {
    // Default 16: on the H100 the wide kernel lost to cuBLASLt at 32 and 64 rows in session 5
    // (register ring) and session 6 (shared-memory pipeline: bound by its per-SM mma.sync work;
    // bench/results/h100_2026-11-24_s6_skinny), so it is opt-in.
    constexpr int64_t kRows[] = {kGemvMaxRows, kGemvMaxRows, 32, kGemvWideMaxRows};
    return kRows[env_choice("GRAPHRT_GEMV_MAX_ROWS", {"16", "32", "64"}, -1) + 1];
  }();
  return rows;
}

void set_gemv_norm_packed(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_gemv_norm_packed: mode {} (-1 environment, 0 an element, 1 packed pairs)",
            mode);
  norm_packed_override = mode;
}

void set_gemv_occ(int mode) {
  GRT_CHECK(mode == -1 || mode == 0 || mode == 2 || mode == 3,
            "set_gemv_occ: mode {} (-1 environment, 0 auto, 2 or 3 blocks an SM)", mode);
  occ_override = mode;
}

void set_gemv_stage(int mode) {
  GRT_CHECK(mode == -1 || mode == 0 || mode == 2 || mode == 3,
            "set_gemv_stage: mode {} (-1 environment, 0 off, 2 or 3: staged at that many blocks an SM)", mode);
  stage_override = mode;
}

void set_gemv_cluster_push(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_gemv_cluster_push: mode {} (-1 environment, 0 pull, 1 push)", mode);
  cluster_push_override = mode;
}

void set_gemv_norm_one_pass(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_gemv_norm_one_pass: mode {} (-1 environment, 0 row by row, 1 one pass)",
            mode);
  norm_one_pass_override = mode;
}

int64_t gemv_wide_min_bytes() {
  static const int64_t bytes = int64_t{env_int("GRAPHRT_GEMV_WIDE_MIN_MB", 0, 0, 1 << 20)} << 20;
  return bytes;
}

bool small_m_fits(const void* x, int64_t x_stride, DType dtype, const void* w, int64_t M, int64_t N, int64_t K) {
  if (M < 1 || M > gemv_max_rows() || (dtype != DType::BF16 && dtype != DType::F16)) return false;
  if (M > kGemvMaxRows && N * K * 2 < gemv_wide_min_bytes()) return false;  // by the weight's size, never by M
  // 16-byte loads of every row of w and x (x_stride only matters with a second row).
  if (K % 8 != 0 || !dense::aligned16(w, K, 2) || !dense::aligned16(x, M > 1 ? x_stride : 0, 2)) return false;
  return N <= (int64_t{1} << 30) && K <= (int64_t{1} << 30);
}

bool linear_small_m(Device d, cudaStream_t stream, const void* x, int64_t x_stride, DType in_dtype, const void* w,
                    const void* bias, DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K) {
  if (!small_m_fits(x, x_stride, in_dtype, w, M, N, K)) return false;
  if (out_dtype != in_dtype && out_dtype != DType::F32) return false;
  if (bias && kind_of(bias_dtype) == kNone) return false;
  run_small_m(d, stream, x, x_stride, in_dtype, w, bias, bias_dtype, out, out_dtype, M, N, K);
  return true;
}

void rms_norm_linear_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* norm_w, float eps,
                             const void* w, const void* bias, DType bias_dtype, void* out, int64_t M, int64_t N,
                             int64_t K) {
  GRT_CHECK(small_m_fits(x, x_stride, dtype, w, M, N, K) && dense::aligned16(norm_w, 0, 2) &&
                (!bias || kind_of(bias_dtype) != kNone),
            "rms_norm_linear: M={} N={} K={} {} does not fit the small-M kernel (check small_m_fits first)", M, N, K,
            dtype_name(dtype));
  Fusion f;
  f.norm_w = norm_w;
  f.eps = eps;
  run_small_m(d, dense::launch_stream(d), x, x_stride, dtype, w, bias, bias_dtype, out, dtype, M, N, K, f);
}

void rms_norm_gate_up_silu_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* norm_w,
                                   float eps, const void* gate_up, void* out, int64_t M, int64_t inter, int64_t K) {
  GRT_CHECK(inter > 0 && inter < (int64_t{1} << 29) && small_m_fits(x, x_stride, dtype, gate_up, M, 2 * inter, K) &&
                (!norm_w || dense::aligned16(norm_w, 0, 2)),
            "rms_norm_gate_up_silu: M={} intermediate={} K={} {} does not fit the small-M kernel (check small_m_fits "
            "first)",
            M, inter, K, dtype_name(dtype));
  Fusion f;
  f.norm_w = norm_w;
  f.eps = eps;
  f.silu_inter = inter;
  run_small_m(d, dense::launch_stream(d), x, x_stride, dtype, gate_up, nullptr, dtype, out, dtype, M, 2 * inter, K, f);
}

void linear_add_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* w, void* residual,
                        int64_t residual_stride, int64_t M, int64_t N, int64_t K) {
  GRT_CHECK(small_m_fits(x, x_stride, dtype, w, M, N, K),
            "linear_add_: M={} N={} K={} {} does not fit the small-M kernel (check small_m_fits first)", M, N, K,
            dtype_name(dtype));
  Fusion f;
  f.residual = residual;
  f.res_stride = residual_stride;
  run_small_m(d, dense::launch_stream(d), x, x_stride, dtype, w, nullptr, dtype, nullptr, dtype, M, N, K, f);
}

}  // namespace grt::cuda
