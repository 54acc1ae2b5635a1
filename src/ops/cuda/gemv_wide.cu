// linear for 17..64 rows of x (decode at batch 17..64; GRAPHRT_GEMV_MAX_ROWS=32|64, gemv.h):
// out[M, N] = x[M, K] · w[N, K]ᵀ (+ bias), with the contract and the decode fusions of gemv.cu
// (M <= 16; read its header first). Session 6 rewrite ("skinny"): w through shared memory in a
// multi-stage cp.async pipeline, so the weight stream no longer waits on the tensor-core math.
//
// Why. Session 5's kernel (git history of this file; bench/results/h100_2026-11-23_s5_gemv64)
// kept w in a register ring refilled only after each step's mmas, behind a stage barrier: its
// loads waited out the compute, and the stream ran at ~1.8 TB/s (cuBLASLt 2.0-2.7, copy 3.0-3.1).
// Here every thread issues its 16-byte cp.async pieces of stage s + S - 1 right after the
// barrier of stage s, before that stage's mmas: S - 1 stages (48 KB of w per block, two
// blocks an SM) are always in flight, whatever the mmas cost; bench stream measured >= 32 KB in
// flight an SM as enough for 3.1 TB/s.
//
// Shape (swap-AB). The rows of w are the mma's M dimension, the 17..64 rows of x its N dimension.
// A block (8 warps) owns a tile of BM = 128 rows of w (64 where N is too small to give the GPU
// enough blocks) and all RM = 32 or 64 rows of x (32 when M <= 32). A stage is 64 k: BM x 64 of w
// and RM x 64 of x, rows of 128 bytes with their 16-byte chunks XOR-swizzled by row (conflict-free
// ldmatrix). Warp (wm, kw) computes 32 rows of w x RM rows of x over the k16 steps kw, kw + WK,
// ... of each stage (WK = 8 / (BM / 32) warps split the stage's 4 steps), A and B by ldmatrix.x4,
// f32 accumulators. Clusters of C blocks (1..8, on sm_90) split K into C contiguous ranges of
// stages; the warps' partial sums meet in shared memory (warp order), the cluster's in
// distributed shared memory (rank order), as in gemv.cu. No scratch, no atomics.
//
// Determinism. BM, C and the stage ranges depend on N, K and the GPU only. A row's sum visits k in
// the same order whatever M: the mma's output column (a row of x) reads only that row, and RM
// (32 or 64) only adds or drops columns. So row r is bit-identical for every M in 17..64 (decode
// graphs pad batches); rows 1..16 run gemv.cu (the class rule of gemv.h).
//
// Fusions. NORM: a block sums the squares of every row of x over its own K range, the cluster adds
// those in rank order; then each thread RMSNorms, in shared memory, the x chunks it copied, once
// they have landed and before the stage's barrier. Residual and silu_and_mul epilogues: gemv.cu's
// (store_out / store_silu); with silu a tile holds BM / 2 gate rows and the same up rows.
//
// PDL. Before pdl_wait a block issues its first S - 1 stages of w (weights only); x follows
// after the wait.
//
// Speed (H100, session 6, bench/results/h100_2026-11-24_s6_skinny): still slower than cuBLASLt
// (llama-3.1-8b bs 64 12.72 vs 9.83 ms a step, bs 32 9.66 vs 8.11; qwen3-0.6b bs 64 5.77 vs
// 4.24), so opt-in. Decoupling the loads was not the missing piece: unclustered launches cost a
// fixed ~0.8 us of an SM per 128 x 64 x 64 CTA-stage (mma.sync + ldmatrix work, not the stream:
// ~20 GB/s of w an SM at most), and clustered ones (C = 4, 8) are 1.4-3.6x slower again.
// Next: wgmma with both operands from shared memory, and no clusters of ~97 KB blocks.
#include <cooperative_groups.h>

#include <algorithm>
#include <mutex>

#include "ops/cuda/attention_mma.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/gemv_common.cuh"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda::gemv_detail {
namespace {

namespace cg = cooperative_groups;
using attn::ldmatrix_x4;
using attn::mma16816;
using attn::smem_addr;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kStageK = 64;     // k per stage: one 128-byte row segment of w and of x
// Ring depth: 4 stages of 128-row tiles (3 in flight, 48 KB of w, while one is computed), 6 of
// 64-row tiles (5 in flight, 40 KB): two blocks an SM either way.
__host__ __device__ constexpr int ring_stages(int bm) { return bm == 128 ? 4 : 6; }
constexpr int kRowBytes = kStageK * 2;
constexpr int kMaxCluster = 8;

// Shared memory of a launch: the ring of stages, aliased after the loop by the warps' partial
// sums (WK x RM rows of BM + 4 floats).
constexpr size_t smem_bytes(int bm, int rm) {
  const size_t ring = static_cast<size_t>(ring_stages(bm)) * (bm + rm) * kRowBytes;
  const size_t red = static_cast<size_t>(kWarps / (bm / 32)) * rm * (bm + 4) * sizeof(float);
  return std::max(ring, red);
}

// cp_async16 (gemv_common.cuh): the L2's 256 bytes bring the next stage's 128 bytes of the same
// row of w with them.
// Waits until at most stages - 2 groups are pending (stages: 4 or 6, uniform).
__device__ __forceinline__ void wait_ring(int stages) {
  if (stages == 4) cp_async_wait<2>();
  else cp_async_wait<4>();
}

// Byte offset of 16-byte chunk c of row r of a stage operand (chunks XOR-swizzled by row).
__device__ __forceinline__ uint32_t swz(int r, int c) {
  return static_cast<uint32_t>(r * kRowBytes + ((c ^ (r & 7)) << 4));
}

template <typename T, int RM, bool NORM>
__global__ void __launch_bounds__(kThreads, 2) skinny_kernel(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ float ss_part[RM];
  __shared__ float inv_rms[RM];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int BM = p.wn * 16;  // rows of w a tile
  const int WM = BM / 32, WK = kWarps / WM;
  const int wm = warp % WM, kw = warp / WM;
  const int C = p.cluster;
  const int rank = static_cast<int>(blockIdx.x % C);
  const int64_t tile = blockIdx.x / C;
  const int64_t n0 = tile * BM;
  const int inter = p.silu_inter, half = BM / 2;
  const int S = ring_stages(BM);
  // This rank's contiguous range of stages.
  const int s0 = static_cast<int>(static_cast<int64_t>(p.groups) * rank / C);
  const int s1 = static_cast<int>(static_cast<int64_t>(p.groups) * (rank + 1) / C);
  const int nst = s1 - s0;
  const auto w_row = [&](int i) -> int64_t {
    if (inter > 0) {
      const int64_t c = tile * half + (i % half);
      return c < inter ? (i >= half ? inter + c : c) : -1;
    }
    return n0 + i < p.N ? n0 + i : -1;
  };

  const uint32_t ring = smem_addr(smem);
  const uint32_t slot_bytes = static_cast<uint32_t>((BM + RM) * kRowBytes);
  // The thread's chunks of a stage: column chunk tid % 8 of rows tid / 8 + 32 i.
  const int cc = tid % 8, r0 = tid / 8;
  const T* wsrc[4];
  bool wok[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t n = 32 * i < BM ? w_row(r0 + 32 * i) : -1;
    wok[i] = n >= 0;
    wsrc[i] = static_cast<const T*>(p.w) + (wok[i] ? n : 0) * p.K;
  }
  const auto issue_w = [&](int it) {
    const int64_t k = static_cast<int64_t>(s0 + it) * kStageK + cc * 8;
    const uint32_t base = ring + static_cast<uint32_t>(it % S) * slot_bytes;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (32 * i < BM) {
        const bool ok = wok[i] && k < p.K;
        cp_async16(base + swz(r0 + 32 * i, cc), ok ? wsrc[i] + k : wsrc[i], ok);
      }
  };
  const auto issue_x = [&](int it) {
    const int64_t k = static_cast<int64_t>(s0 + it) * kStageK + cc * 8;
    const uint32_t base = ring + static_cast<uint32_t>(it % S) * slot_bytes + BM * kRowBytes;
#pragma unroll
    for (int i = 0; i < RM / 32; ++i) {
      const int m = r0 + 32 * i;
      const bool ok = m < p.M && k < p.K;
      cp_async16(base + swz(m, cc), static_cast<const T*>(p.x) + (ok ? m * p.x_stride + k : 0), ok);
    }
  };

  // Before pdl_wait (ops/cuda/pdl.cuh): weights only.
  for (int it = 0; it < S - 1; ++it)
    if (it < nst) issue_w(it);
  pdl_wait();
  if (p.early_trigger) pdl_trigger();
  // Group it holds x of stage it (group 0 also every w above): the loop waits group by group.
  for (int it = 0; it < S - 1; ++it) {
    if (it < nst) issue_x(it);
    cp_async_commit();
  }

  if constexpr (NORM) {
    // The squares of each row over this block's K range (a warp per row, lanes over 16-byte
    // chunks in order, then a butterfly), then the cluster's partial sums in rank order.
    const int64_t k_end = std::min<int64_t>(static_cast<int64_t>(s1) * kStageK, p.K);
    for (int m = warp; m < RM; m += kWarps) {
      float ss = 0.0f;
      if (m < p.M) {
        const T* row = static_cast<const T*>(p.x) + m * p.x_stride;
        for (int64_t k = static_cast<int64_t>(s0) * kStageK + lane * 8; k < k_end; k += 32 * 8)
          ss = add_squares<T>(ss, __ldg(reinterpret_cast<const uint4*>(row + k)));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      }
      if (lane == 0) ss_part[m] = ss;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (C > 1) {
      cg::cluster_group cluster = cg::this_cluster();
      cluster.sync();
      if (tid < RM) {
        float s = 0.0f;
        for (int q = 0; q < C; ++q) s += *cluster.map_shared_rank(&ss_part[tid], q);
        inv_rms[tid] = rsqrtf(s / static_cast<float>(p.K) + p.eps);
      }
    } else
#endif
    {
      __syncthreads();
      if (tid < RM) inv_rms[tid] = rsqrtf((0.0f + ss_part[tid]) / static_cast<float>(p.K) + p.eps);
    }
    __syncthreads();
  }

  float acc[2][RM / 8][4] = {};
  for (int it = 0; it < nst; ++it) {
    wait_ring(S);  // this thread's copies of stage it have landed
    const uint32_t slot = ring + static_cast<uint32_t>(it % S) * slot_bytes;
    if constexpr (NORM) {
      // RMSNorm in place of the x chunks this thread copied (rounded as rms_norm rounds).
      const int64_t k = static_cast<int64_t>(s0 + it) * kStageK + cc * 8;
      if (k < p.K) {
        const uint4 nw = __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(p.norm_w) + k));
#pragma unroll
        for (int i = 0; i < RM / 32; ++i) {
          const int m = r0 + 32 * i;
          if (m >= p.M) continue;
          uint4* q = reinterpret_cast<uint4*>(smem + (it % S) * slot_bytes + BM * kRowBytes + swz(m, cc));
          *q = norm_chunk<T>(*q, nw, inv_rms[m]);
        }
      }
    }
    __syncthreads();  // stage it is complete for every warp; nobody reads stage it - 1 any more
    if (it + S - 1 < nst) {
      issue_w(it + S - 1);  // into the slot of stage it - 1
      issue_x(it + S - 1);
    }
    cp_async_commit();  // always: the group count stays in step with the loop
    const uint32_t ws = slot, xs = slot + BM * kRowBytes;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      if (s % WK != kw) continue;
      uint32_t a[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int r = wm * 32 + i * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
        ldmatrix_x4(a[i], ws + swz(r, 2 * s + lane / 16));
      }
#pragma unroll
      for (int j = 0; j < RM / 16; ++j) {
        uint32_t b[4];
        const int r = j * 16 + (lane % 8) + (lane / 16) * 8;
        ldmatrix_x4(b, xs + swz(r, 2 * s + (lane / 8) % 2));
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          mma16816<T>(acc[i][2 * j], a[i], b[0], b[1]);
          mma16816<T>(acc[i][2 * j + 1], a[i], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();
  if (!p.early_trigger) pdl_trigger();
  __syncthreads();  // every warp is done with the ring: the partial sums alias it

  // Accumulator c of (i, j) is tile row wm*32 + 16i + g (+8 for c >= 2) of x row 8j + 2t (+1 for odd c).
  float* red = reinterpret_cast<float*>(smem);
  const int ldr = BM + 4;
  float* mine = red + kw * RM * ldr;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < RM / 8; ++j) {
      const int col = wm * 32 + 16 * i + g, m = 8 * j + 2 * t;
      mine[m * ldr + col] = acc[i][j][0];
      mine[(m + 1) * ldr + col] = acc[i][j][1];
      mine[m * ldr + col + 8] = acc[i][j][2];
      mine[(m + 1) * ldr + col + 8] = acc[i][j][3];
    }
  __syncthreads();
  const int E = RM * BM;  // outputs of the tile, row-major over (row of x, tile row)
  for (int e = tid; e < E; e += kThreads) {
    const int i = (e / BM) * ldr + e % BM;
    float s = red[i];
    for (int v = 1; v < WK; ++v) s += red[v * RM * ldr + i];
    if (C == 1 && inter == 0) store_out(p, e / BM, n0 + e % BM, s);
    else red[i] = s;  // only this thread touches element i: no barrier before the cluster's
  }
  if (C == 1 && inter > 0) {
    __syncthreads();  // a gate sum and its up sum were added by different threads
    for (int e = tid; e < E / 2; e += kThreads) {
      const float* gs = &red[(e / half) * ldr + e % half];
      store_silu<T>(p, e / half, tile * half + e % half, gs[0], gs[half]);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (C > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's partial sums are in its red
    const int per = (inter > 0 ? E / 2 : E) / C;
    const int lo = rank * per, hi = rank == C - 1 ? (inter > 0 ? E / 2 : E) : lo + per;
    for (int e = lo + tid; e < hi; e += kThreads) {
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
      float* own = &red[(e / BM) * ldr + e % BM];
      float s = *cluster.map_shared_rank(own, 0);
      for (int q = 1; q < C; ++q) s += *cluster.map_shared_rank(own, q);
      store_out(p, e / BM, n0 + e % BM, s);
    }
    cluster.sync();  // this block's shared memory stays until the others have read it
  }
#endif
}

template <typename T, int RM, bool NORM>
void allow_smem_of(int index) {
  auto* kernel = skinny_kernel<T, RM, NORM>;
  const size_t bytes = std::max(smem_bytes(128, RM), smem_bytes(64, RM));
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
                 "letting the wide GEMV use {} bytes of shared memory on cuda:{}", bytes, index);
  // Two blocks an SM need most of the SM's shared memory as such.
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      static_cast<int>(cudaSharedmemCarveoutMaxShared)),
                 "preferring shared memory for the wide GEMV on cuda:{}", index);
}

// Sets every skinny_kernel instance's attributes on the current device `index`, all at its first
// launch there (an eager one: graph runners warm up before they capture), so that no attribute
// is set while a stream captures.
void allow_smem(int index) {
  static std::mutex mu;
  static uint64_t done = 0;
  std::lock_guard<std::mutex> lock(mu);
  const uint64_t bit = uint64_t{1} << (index & 63);
  if (done & bit) return;
  allow_smem_of<__nv_bfloat16, 32, false>(index);
  allow_smem_of<__nv_bfloat16, 32, true>(index);
  allow_smem_of<__nv_bfloat16, 64, false>(index);
  allow_smem_of<__nv_bfloat16, 64, true>(index);
  allow_smem_of<__half, 32, false>(index);
  allow_smem_of<__half, 32, true>(index);
  allow_smem_of<__half, 64, false>(index);
  allow_smem_of<__half, 64, true>(index);
  done |= bit;
}

template <typename T, int RM, bool NORM>
void launch(int index, cudaStream_t stream, const Params& p, int64_t blocks) {
  allow_smem(index);
  (void)launch_pdl(index, skinny_kernel<T, RM, NORM>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                   smem_bytes(p.wn * 16, RM), stream, static_cast<unsigned>(p.cluster),
                   p);  // its error is also the last error, checked by the caller
}

template <typename T>
void launch_rows(int index, cudaStream_t stream, const Params& p, int64_t blocks) {
  const bool wide = p.M > 32;
  if (p.norm_w) {
    if (wide) launch<T, 64, true>(index, stream, p, blocks);
    else launch<T, 32, true>(index, stream, p, blocks);
  } else {
    if (wide) launch<T, 64, false>(index, stream, p, blocks);
    else launch<T, 32, false>(index, stream, p, blocks);
  }
}

}  // namespace

// The split: 128-row tiles when clusters of at most 8 can give every SM a block, else 64-row
// tiles; clusters doubled while the grid stays within two blocks an SM (one wave, all resident)
// and every rank keeps at least two stages.
void launch_wide(int index, cudaStream_t stream, Params p, bool bf16, const DeviceInfo& info) {
  const int64_t N = p.N, K = p.K;
  // With silu N = 2 x intermediate: a tile holds bm / 2 gate rows and as many up rows.
  const int bm = (N + 127) / 128 * (info.clusters ? kMaxCluster : 1) >= info.sms ? 128 : 64;
  p.wn = bm / 16;
  const int64_t tiles = (N + bm - 1) / bm;
  const int64_t stages = (K + kStageK - 1) / kStageK;
  int c = 1;
  while (info.clusters && c < kMaxCluster && tiles * c * 2 <= 2 * static_cast<int64_t>(info.sms) &&
         stages >= 4 * c)
    c *= 2;
  p.cluster = c;
  p.groups = static_cast<int>(stages);
  p.prefetch = 0;
  const int64_t blocks = tiles * c;
  if (bf16) launch_rows<__nv_bfloat16>(index, stream, p, blocks);
  else launch_rows<__half>(index, stream, p, blocks);
}

}  // namespace grt::cuda::gemv_detail
