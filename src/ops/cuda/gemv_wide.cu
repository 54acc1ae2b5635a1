// linear for 17..64 rows of x (decode at batch 17..64; opt-in with GRAPHRT_GEMV_MAX_ROWS=32|64,
// see the note on speed at the end of this comment): out[M, N] = x[M, K] · w[N, K]ᵀ (+ bias),
// with the contract and the decode fusions of gemv.cu (M <= 16; read its header first), in a
// split that keeps the weight stream near copy bandwidth while x has many rows.
//
// Why another split. In gemv.cu every warp reads its own K group of x for its 32 rows of w: at
// 64 rows of x, twice as many bytes of x (L1/L2) as of w, per warp, and the whole of x per block.
// Here the 8 warps of a block share x: a block owns a tile of 16 x wn rows of w (wn = 8, or 4
// where N is too small to fill the GPU with 128-row tiles), each warp 16 rows, and the other
// 8 / wn warps split K. The block stages x, 128 k per K-warp per stage, into shared memory once
// (cp.async, double buffered, RMSNorm'ed in place when fused), and every warp reads its mma B
// fragments (16 bytes of a row of x, as gemv.cu's lanes load them) from there: x costs the L2
// 64 / (16 x wn) of what w costs the HBM. w streams with gemv.cu's 16-byte no-L1 loads, each warp
// keeping its next 4 steps of 32 k in flight (a ring of registers refilled as each step is used).
// Clusters of C blocks split K by stages (rank q takes stages q, q + C, ...), their partial sums
// meeting in distributed shared memory as in gemv.cu.
//
// Determinism. wn, C and the stage size depend on N, K and the GPU only; a row's sum visits k in
// the same order whatever M, and NT (4 column tiles of 8 rows of x for M <= 32, else 8) only adds
// mmas on other accumulators. So row r is bit-identical for every M in 17..64 (decode graphs pad
// batches). Rows 1..16 run gemv.cu's kernel, whose sums group k differently: the kernel is chosen
// by the class of M (1..16 or 17..64), so a padded batch keeps its eager bits when the captured
// batch sizes include 16.
//
// NORM: a block sums the squares of every row over its own K share (the stages it stages), the
// cluster's blocks add those partial sums in rank order (distributed shared memory): each x
// element is read once per cluster for the norm, not once per block.
//
// Speed (H100, session 5): slower than cuBLASLt (llama-3.1-8b bs 64 13.63 vs 11.44 ms a step, bs 32
// 10.52 vs 9.88; qwen3-0.6b bs 64 5.81 vs 4.73). The w ring is refilled only as each step's mmas
// are done, and the stage barrier ties the 8 warps together, so a warp's 4 KB in flight wait out
// the load latency plus the stage's mma and shared-memory work (twice as long at 64 rows as at
// 32, which lost less): the stream runs at ~1.8 TB/s instead of 2.4-2.7. Next: w into shared
// memory through a multi-stage TMA / cp.async pipeline (loads decoupled from the mmas), wgmma.
#include <cooperative_groups.h>

#include <algorithm>
#include <mutex>

#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gemv_common.cuh"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda::gemv_detail {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kWarpK = 128;       // k per warp per stage: 4 steps of 32 (4 lanes x 8 elements)
constexpr int kSteps = kWarpK / 32;
constexpr int kPadK = 32;         // x row padding (64 bytes): a quarter warp's two rows hit 32 banks
constexpr int kMaxCluster = 8;

// Shared memory of a launch: two staging buffers of RM rows, aliased by the reduction after the
// loop (wk x RM rows of 16 x wn sums + 4 pad).
constexpr size_t smem_bytes(int rm, int wn) {
  const size_t stage = static_cast<size_t>(rm) * (kWarpK * (kWarps / wn) + kPadK) * 2;
  const size_t red = static_cast<size_t>(kWarps / wn) * rm * (16 * wn + 4) * sizeof(float);
  return std::max(2 * stage, red);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* g, int bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(g), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Starts the copy of x[rows < M, k0 .. k0 + sk) into buf (row stride ldx); zeros past K.
template <typename T, int RM>
__device__ __forceinline__ void stage_issue(const Params& p, T* buf, int ldx, int64_t k0, int sk) {
  const int cpr = sk / 8;
  for (int c = threadIdx.x; c < RM * cpr; c += kThreads) {
    const int m = c / cpr, kc = (c % cpr) * 8;
    if (m >= p.M) continue;
    const int64_t k = k0 + kc;
    const bool in = k < p.K;
    cp_async16(buf + m * ldx + kc, static_cast<const T*>(p.x) + m * p.x_stride + (in ? k : 0), in ? 16 : 0);
  }
  cp_async_commit();
}

// RMSNorm in place of the chunks this thread staged (the same indices as stage_issue's).
template <typename T, int RM>
__device__ __forceinline__ void stage_norm(const Params& p, T* buf, int ldx, int64_t k0, int sk, const float* inv) {
  const int cpr = sk / 8;
  for (int c = threadIdx.x; c < RM * cpr; c += kThreads) {
    const int m = c / cpr, kc = (c % cpr) * 8;
    const int64_t k = k0 + kc;
    if (m >= p.M || k >= p.K) continue;
    uint4* q = reinterpret_cast<uint4*>(buf + m * ldx + kc);
    *q = norm_chunk<T>(*q, __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(p.norm_w) + k)), inv[m]);
  }
}

template <typename T, int NT, bool NORM>
__global__ void __launch_bounds__(kThreads, 2) wide_kernel(Params p) {
  constexpr int RM = NT * 8;  // rows of x the block holds (those past M are zeros)
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float ss_part[RM];
  __shared__ float inv_rms[RM];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wn = p.wn, wk = kWarps / wn;
  const int nsl = warp % wn, kw = warp / wn;  // the warp's 16 rows of the tile, its K part
  const int sk = kWarpK * wk, ldx = sk + kPadK;
  const int tn = 16 * wn, half = tn / 2;  // tile rows; with silu, gate rows then as many up rows
  const int C = p.cluster;
  const int rank = static_cast<int>(blockIdx.x % C);
  const int64_t tile = blockIdx.x / C;
  const int64_t n0 = tile * tn;
  const int inter = p.silu_inter;
  const int stages = p.groups;
  const auto w_row = [&](int i) -> int64_t {
    if (inter > 0) {
      const int64_t c = tile * half + (i % half);
      return c < inter ? (i >= half ? inter + c : c) : -1;
    }
    return n0 + i < p.N ? n0 + i : -1;
  };

  // The lane's two rows of w (rows g and g + 8 of the warp's 16).
  const T* wr[2];
  bool wok[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int64_t n = w_row(nsl * 16 + 8 * j + g);
    wok[j] = n >= 0;
    wr[j] = static_cast<const T*>(p.w) + (wok[j] ? n : 0) * p.K;
  }
  uint4 a[kSteps][2];
  // Step i of stage st: the lane's 16 bytes of both rows (zeros past K or N).
  const auto load_step = [&](int st, int i) {
    const int64_t k = static_cast<int64_t>(st) * sk + kw * kWarpK + i * 32 + t * 8;
#pragma unroll
    for (int j = 0; j < 2; ++j) a[i][j] = k < p.K && wok[j] ? load_weight(wr[j] + k) : make_uint4(0, 0, 0, 0);
  };

  // Before pdl_wait (ops/cuda/pdl.cuh): weights only. The first stage goes to registers, the next
  // p.prefetch stages to L2 (lane l: row l % 16 of the warp's, 64 k at (l / 16) * 64).
#pragma unroll
  for (int i = 0; i < kSteps; ++i) load_step(rank, i);
  {
    const int64_t pf_row = w_row(nsl * 16 + lane % 16);
    const int64_t koff = kw * kWarpK + (lane / 16) * 64;
    if (pf_row >= 0)
      for (int j = 1; j <= p.prefetch; ++j) {
        const int64_t k = static_cast<int64_t>(rank + j * C) * sk + koff;
        if (rank + j * C >= stages || k >= p.K) break;
        prefetch_l2(static_cast<const T*>(p.w) + pf_row * p.K + k);
      }
  }
  pdl_wait();
  if (p.early_trigger) pdl_trigger();

  T* const buf0 = reinterpret_cast<T*>(smem);
  const auto buf = [&](int b) { return buf0 + b * RM * ldx; };
  // Rows past M stay zeros in both buffers (their outputs are never stored).
  for (int c = threadIdx.x; c < (RM - p.M) * (sk / 8); c += kThreads) {
    const int m = p.M + c / (sk / 8), kc = (c % (sk / 8)) * 8;
    *reinterpret_cast<uint4*>(buf(0) + m * ldx + kc) = make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(buf(1) + m * ldx + kc) = make_uint4(0, 0, 0, 0);
  }

  if constexpr (NORM) {
    // The squares of each row over this block's stages (a warp per row, lanes over 16-byte
    // chunks, stages in order, then a butterfly), then the cluster's partial sums in rank order.
    for (int m = warp; m < RM; m += kWarps) {
      float ss = 0.0f;
      if (m < p.M) {
        const T* row = static_cast<const T*>(p.x) + m * p.x_stride;
        for (int st = rank; st < stages; st += C)
          for (int c = lane; c < sk / 8; c += 32) {
            const int64_t k = static_cast<int64_t>(st) * sk + c * 8;
            if (k < p.K) ss = add_squares<T>(ss, __ldg(reinterpret_cast<const uint4*>(row + k)));
          }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      }
      if (lane == 0) ss_part[m] = ss;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (C > 1) {
      cg::cluster_group cluster = cg::this_cluster();
      cluster.sync();
      if (threadIdx.x < RM) {
        float s = 0.0f;
        for (int q = 0; q < C; ++q) s += *cluster.map_shared_rank(&ss_part[threadIdx.x], q);
        inv_rms[threadIdx.x] = rsqrtf(s / static_cast<float>(p.K) + p.eps);
      }
    } else
#endif
    {
      __syncthreads();
      if (threadIdx.x < RM) inv_rms[threadIdx.x] = rsqrtf((0.0f + ss_part[threadIdx.x]) / static_cast<float>(p.K) + p.eps);
    }
    __syncthreads();
  }

  float acc[NT][4] = {};
  int cur = 0;
  if (rank < stages) {
    stage_issue<T, RM>(p, buf(0), ldx, static_cast<int64_t>(rank) * sk, sk);
    cp_async_wait_all();
    if constexpr (NORM) stage_norm<T, RM>(p, buf(0), ldx, static_cast<int64_t>(rank) * sk, sk, inv_rms);
  }
  __syncthreads();
  for (int st = rank; st < stages; st += C) {
    const bool more = st + C < stages;  // the same in every thread of the block
    const int64_t k_next = static_cast<int64_t>(st + C) * sk;
    if (more) stage_issue<T, RM>(p, buf(cur ^ 1), ldx, k_next, sk);
    const T* xs = buf(cur) + kw * kWarpK + t * 8;
#pragma unroll
    for (int i = 0; i < kSteps; ++i) {
#pragma unroll
      for (int h = 0; h < NT; ++h) {
        // Elements 0-3 of the lane's 16 bytes, then 4-7 (A regs: row g, row g+8, row g hi, row g+8 hi).
        const uint4 b = *reinterpret_cast<const uint4*>(xs + (8 * h + g) * ldx + i * 32);
        mma<T>(acc[h], a[i][0].x, a[i][1].x, a[i][0].y, a[i][1].y, b.x, b.y);
        mma<T>(acc[h], a[i][0].z, a[i][1].z, a[i][0].w, a[i][1].w, b.z, b.w);
      }
      if (more) load_step(st + C, i);  // the ring: step i of the next stage takes this step's registers
    }
    if (more) {
      cp_async_wait_all();
      if constexpr (NORM) stage_norm<T, RM>(p, buf(cur ^ 1), ldx, k_next, sk, inv_rms);
    }
    __syncthreads();  // the next stage is visible, and nobody reads this one any more
    cur ^= 1;
  }
  if (!p.early_trigger) pdl_trigger();

  // The reduction aliases the staging buffers (every warp is past the loop's last barrier).
  // Accumulator i of column tile h is tile row nsl*16 + g (+8 for i >= 2) of x row 8h + 2t (+1 for odd i).
  float* red = reinterpret_cast<float*>(smem);
  const int ldr = tn + 4;
  float* mine = red + kw * RM * ldr;
#pragma unroll
  for (int h = 0; h < NT; ++h) {
    const int col = nsl * 16 + g, m = 8 * h + 2 * t;
    mine[m * ldr + col] = acc[h][0];
    mine[(m + 1) * ldr + col] = acc[h][1];
    mine[m * ldr + col + 8] = acc[h][2];
    mine[(m + 1) * ldr + col + 8] = acc[h][3];
  }
  __syncthreads();
  const int E = RM * tn;  // outputs of the tile, row-major over (row of x, tile row)
  for (int e = threadIdx.x; e < E; e += kThreads) {
    const int i = (e / tn) * ldr + e % tn;
    float s = red[i];
    for (int v = 1; v < wk; ++v) s += red[v * RM * ldr + i];
    if (C == 1 && inter == 0) store_out(p, e / tn, n0 + e % tn, s);
    else red[i] = s;  // only this thread touches element i: no barrier before the cluster's
  }
  if (C == 1 && inter > 0) {
    __syncthreads();  // a gate sum and its up sum were added by different threads
    for (int e = threadIdx.x; e < E / 2; e += kThreads) {
      const float* gs = &red[(e / half) * ldr + e % half];
      store_silu<T>(p, e / half, tile * half + e % half, gs[0], gs[half]);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (C > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's partial sums are in its red
    const int per = (inter > 0 ? E / 2 : E) / C;
    for (int e = rank * per + static_cast<int>(threadIdx.x); e < (rank + 1) * per; e += kThreads) {
      if (inter > 0) {
        float* own = &red[(e / half) * ldr + e % half];
        float sg = *cluster.map_shared_rank(own, 0), su = *cluster.map_shared_rank(own + half, 0);
        for (int q = 1; q < C; ++q) {
          sg += *cluster.map_shared_rank(own, q);
          su += *cluster.map_shared_rank(own + half, q);
        }
        store_silu<T>(p, e / half, tile * half + e % half, sg, su);
        continue;
      }
      float* own = &red[(e / tn) * ldr + e % tn];
      float s = *cluster.map_shared_rank(own, 0);
      for (int q = 1; q < C; ++q) s += *cluster.map_shared_rank(own, q);
      store_out(p, e / tn, n0 + e % tn, s);
    }
    cluster.sync();  // this block's shared memory stays until the others have read it
  }
#endif
}

template <typename T, int NT, bool NORM>
void allow_smem_of(int index) {
  const size_t bytes = std::max(smem_bytes(NT * 8, 8), smem_bytes(NT * 8, 4));
  GRT_CUDA_CHECK(cudaFuncSetAttribute(wide_kernel<T, NT, NORM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)),
                 "letting the wide GEMV use {} bytes of shared memory on cuda:{}", bytes, index);
}

// Lets every wide_kernel instance use its most dynamic shared memory on the current device
// `index`, all at its first launch there (an eager one: graph runners warm up before they
// capture), so that no attribute is set while a stream captures.
void allow_smem(int index) {
  static std::mutex mu;
  static uint64_t done = 0;
  std::lock_guard<std::mutex> lock(mu);
  const uint64_t bit = uint64_t{1} << (index & 63);
  if (done & bit) return;
  allow_smem_of<__nv_bfloat16, 4, false>(index);
  allow_smem_of<__nv_bfloat16, 4, true>(index);
  allow_smem_of<__nv_bfloat16, 8, false>(index);
  allow_smem_of<__nv_bfloat16, 8, true>(index);
  allow_smem_of<__half, 4, false>(index);
  allow_smem_of<__half, 4, true>(index);
  allow_smem_of<__half, 8, false>(index);
  allow_smem_of<__half, 8, true>(index);
  done |= bit;
}

template <typename T, int NT, bool NORM>
void launch(int index, cudaStream_t stream, const Params& p, int64_t blocks) {
  constexpr int RM = NT * 8;
  auto* kernel = wide_kernel<T, NT, NORM>;
  allow_smem(index);
  (void)launch_pdl(index, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), smem_bytes(RM, p.wn), stream,
                   static_cast<unsigned>(p.cluster), p);  // its error is also the last error, checked by the caller
}

template <typename T>
void launch_rows(int index, cudaStream_t stream, const Params& p, int64_t blocks) {
  const bool eight = p.M > 32;
  if (p.norm_w) {
    if (eight) launch<T, 8, true>(index, stream, p, blocks);
    else launch<T, 4, true>(index, stream, p, blocks);
  } else {
    if (eight) launch<T, 8, false>(index, stream, p, blocks);
    else launch<T, 4, false>(index, stream, p, blocks);
  }
}

}  // namespace

// The split: 128-row tiles (wn = 8) when they can fill the GPU with clusters of at most 8, else
// 64-row tiles (wn = 4, two warps over K); clusters doubled while the grid stays within two
// blocks per SM and every block gets a stage; L2 prefetch as gemv.cu's (a quarter of the L2).
void launch_wide(int index, cudaStream_t stream, Params p, bool bf16, const DeviceInfo& info) {
  const int64_t N = p.N, K = p.K;
  p.wn = (N + 127) / 128 * kMaxCluster >= info.sms ? 8 : 4;
  const int64_t tile_rows = 16 * p.wn, sk = kWarpK * (kWarps / p.wn);
  const int64_t tiles = (N + tile_rows - 1) / tile_rows;  // with silu: N = 2 x inter, tile_rows / 2 of each
  const int64_t stages = (K + sk - 1) / sk;
  int c = 1;
  while (info.clusters && c < kMaxCluster && tiles * c <= info.sms && stages >= 2 * c) c *= 2;
  p.cluster = c;
  p.groups = static_cast<int>(stages);
  const int64_t blocks = tiles * c;
  const int64_t resident = std::min<int64_t>(blocks, 2 * static_cast<int64_t>(info.sms));
  const int64_t per_stage = std::max<int64_t>(resident * tile_rows * sk * 2, 1);  // bytes of one stage, grid-wide
  const int64_t per_rank = (stages + c - 1) / c;
  p.prefetch = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(info.l2_bytes / 4 / per_stage, per_rank - 1), 0, 8));
  if (bf16) launch_rows<__nv_bfloat16>(index, stream, p, blocks);
  else launch_rows<__half>(index, stream, p, blocks);
}

}  // namespace grt::cuda::gemv_detail
