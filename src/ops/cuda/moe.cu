// MoE kernels (ops/moe.h). Every grid is sized from host sizes (tokens, the worst-case grouped
// row count), never from routing results: blocks of rows that no expert uses read -1 from the
// device-side block table and exit. So the ops are capture-safe and one captured graph serves
// every routing.
//
// route:   one warp per token: softmax over <= 512 experts held in registers, k warp argmaxes.
// group:   one block: shared-memory counts, block-padded offsets, slot scatter (atomics; the
//          order within an expert varies, the per-row results do not).
// experts: two grouped GEMMs on bf16 tensor cores (WMMA 16x16x16, f32 accumulation), 16 rows x
//          64 columns per block: gate/up together with silu*mul in the epilogue, then down;
//          small batches run the grouped GEMVs of moe_gemv.cu instead (the caller's choice).
// combine: per token, the k weighted rows summed in float32 in choice order.
#include <mma.h>

#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/moe_cuda.h"
#include "ops/cuda/moe_gemv.h"
#include "ops/cuda/moe_common.cuh"

namespace grt::cuda {
namespace {

using namespace dense;
using bf16 = __nv_bfloat16;

template <typename T>
__global__ void route_kernel(const T* logits, const int32_t* num_real, int32_t* ids, float* weights, int64_t tokens,
                             int experts, int top_k, bool renormalize) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (t >= tokens) return;
  int64_t real = tokens;
  if (num_real) real = min(max(static_cast<int64_t>(*num_real), int64_t{0}), tokens);
  moe::route_row(logits + t * experts, t < real, ids + t * top_k, weights + t * top_k, experts, top_k, renormalize);
}

constexpr int kGroupThreads = 1024;

__global__ void group_kernel(ops::MoeGroupArgs a) { moe::group_block(a); }

// Grouped GEMM: C[r, n] = sum_k A[r, k] * W_e[n, k] for the rows r of one 16-row block of expert
// e. kGated: W holds gate rows [0, N) and up rows [N, 2N); the block computes both and stores
// silu(gate) * up (each rounded to bf16 as transformers does). A row r is x[sorted_slots[r] /
// top_k] (kGated) or act[r] (down).
constexpr int BM = 16, BN = 64, BK = 32, LDS = BK + 8, kGemmThreads = 128;

template <bool kGated>
__global__ void __launch_bounds__(kGemmThreads) grouped_gemm_kernel(const bf16* a_src, const int32_t* sorted_slots,
                                                                    const int32_t* block_expert, int64_t top_k,
                                                                    const bf16* w, bf16* out, int64_t N, int64_t K) {
  using namespace nvcuda;
  const int e = block_expert[blockIdx.x];
  if (e < 0) return;  // a block no expert uses
  __shared__ __align__(32) bf16 As[BM][LDS];
  __shared__ __align__(32) bf16 Bs[kGated ? 2 : 1][BN][LDS];
  __shared__ __align__(32) float Cs[kGated ? 2 : 1][BM][BN];
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * BM, n0 = static_cast<int64_t>(blockIdx.y) * BN;
  const int tid = threadIdx.x, warp = tid / 32;
  const bf16* we = w + static_cast<int64_t>(e) * (kGated ? 2 : 1) * N * K;
  // The A row this thread loads (threads 0..63: row tid / 4, chunk tid % 4).
  const bf16* a_row = nullptr;
  if (tid < BM * (BK / 8)) {
    const int64_t r = row0 + tid / 4;
    if (kGated) {
      const int slot = sorted_slots[r];
      if (slot >= 0) a_row = a_src + (slot / top_k) * K;
    } else if (sorted_slots[r] >= 0) {
      a_row = a_src + r * K;
    }
  }
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kGated ? 2 : 1];
  for (auto& f : acc) wmma::fill_fragment(f, 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    if (tid < BM * (BK / 8)) {
      const int64_t k = k0 + (tid % 4) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (a_row && k < K) v = *reinterpret_cast<const uint4*>(a_row + k);
      *reinterpret_cast<uint4*>(&As[tid / 4][(tid % 4) * 8]) = v;
    }
#pragma unroll
    for (int m = 0; m < (kGated ? 2 : 1); ++m)
      for (int c = tid; c < BN * (BK / 8); c += kGemmThreads) {
        const int64_t n = n0 + c / 4, k = k0 + (c % 4) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (n < N && k < K) v = *reinterpret_cast<const uint4*>(we + (m * N + n) * K + k);
        *reinterpret_cast<uint4*>(&Bs[m][c / 4][(c % 4) * 8]) = v;
      }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
      wmma::load_matrix_sync(fa, &As[0][kk], LDS);
#pragma unroll
      for (int m = 0; m < (kGated ? 2 : 1); ++m) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
        wmma::load_matrix_sync(fb, &Bs[m][warp * 16][kk], LDS);
        wmma::mma_sync(acc[m], fa, fb, acc[m]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < (kGated ? 2 : 1); ++m) wmma::store_matrix_sync(&Cs[m][0][warp * 16], acc[m], BN, wmma::mem_row_major);
  __syncthreads();
  for (int i = tid; i < BM * BN; i += kGemmThreads) {
    const int r = i / BN, c = i % BN;
    const int64_t n = n0 + c;
    if (n >= N) continue;
    float v;
    if (kGated) {
      const float g = round_to<bf16>(Cs[0][r][c]), u = round_to<bf16>(Cs[1][r][c]);
      v = round_to<bf16>(g / (1.0f + expf(-g))) * u;
    } else {
      v = Cs[0][r][c];
    }
    out[(row0 + r) * N + n] = __float2bfloat16_rn(v);
  }
}

constexpr int kCombineThreads = 128;

__global__ void combine_kernel(const bf16* y, const int32_t* slot_rows, const float* weights, bf16* out,
                               int64_t top_k, int64_t hidden) {
  const int64_t t = blockIdx.x;
  const int64_t c = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * 8;
  if (c >= hidden) return;
  float acc[8] = {};
  for (int64_t j = 0; j < top_k; ++j) {
    const int32_t row = slot_rows[t * top_k + j];
    if (row < 0) continue;
    const float w = weights[t * top_k + j];
    float v[8];
    load_chunk(y + static_cast<int64_t>(row) * hidden, c, hidden, true, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] += w * v[i];
  }
  store_chunk(out + t * hidden, c, hidden, true, acc);
}

void check_grid(const char* op, int64_t x, int64_t y) {
  GRT_CHECK(x >= 1 && x <= 0x7fffffff && y >= 1 && y <= 65535, "{}: grid {} x {} exceeds CUDA's limits", op, x, y);
}

}  // namespace

void moe_route(Device d, const ops::MoeRouteArgs& a) {
  cudaStream_t s = launch_stream(d);
  GRT_CHECK(a.experts <= 32 * moe::kMaxPerLane, "moe_route on CUDA: {} experts exceed {}", a.experts, 32 * moe::kMaxPerLane);
  constexpr int kWarps = 4;
  const int64_t blocks = (a.tokens + kWarps - 1) / kWarps;
  check_grid("moe_route", blocks, 1);
  if (a.logits_dtype == DType::BF16)
    route_kernel<bf16><<<static_cast<unsigned>(blocks), kWarps * 32, 0, s>>>(
        static_cast<const bf16*>(a.logits), a.num_real, a.topk_ids, a.topk_weights, a.tokens,
        static_cast<int>(a.experts), static_cast<int>(a.top_k), a.renormalize);
  else
    route_kernel<float><<<static_cast<unsigned>(blocks), kWarps * 32, 0, s>>>(
        static_cast<const float*>(a.logits), a.num_real, a.topk_ids, a.topk_weights, a.tokens,
        static_cast<int>(a.experts), static_cast<int>(a.top_k), a.renormalize);
  GRT_CUDA_CHECK_LAUNCH("moe_route tokens={} experts={} top_k={}", a.tokens, a.experts, a.top_k);
}

void moe_group(Device d, const ops::MoeGroupArgs& a) {
  cudaStream_t s = launch_stream(d);
  GRT_CHECK(a.experts <= 512, "moe_group on CUDA: {} experts exceed 512", a.experts);
  GRT_CHECK(a.max_rows <= 0x7fffffff, "moe_group: {} rows exceed int32 indices", a.max_rows);
  group_kernel<<<1, kGroupThreads, 0, s>>>(a);
  GRT_CUDA_CHECK_LAUNCH("moe_group slots={} experts={}", a.slots, a.experts);
}

void moe_experts(Device d, const ops::MoeExpertsArgs& a) {
  cudaStream_t s = launch_stream(d);
  GRT_CHECK(a.dtype == DType::BF16, "moe_experts on CUDA supports bf16 only, got {}", dtype_name(a.dtype));
  GRT_CHECK(a.block_rows == BM, "moe_experts on CUDA needs blocks of {} rows, got {}", BM, a.block_rows);
  if (a.use_gemv) {
    moe_experts_gemv(s, a);
    return;
  }
  const int64_t blocks = a.max_rows / BM;
  const int64_t gate_cols = (a.inter + BN - 1) / BN, down_cols = (a.hidden + BN - 1) / BN;
  check_grid("moe_experts", blocks, std::max(gate_cols, down_cols));
  grouped_gemm_kernel<true><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(gate_cols)), kGemmThreads, 0,
                              s>>>(static_cast<const bf16*>(a.x), a.sorted_slots, a.block_expert, a.top_k,
                                   static_cast<const bf16*>(a.gate_up), static_cast<bf16*>(a.act), a.inter, a.hidden);
  GRT_CUDA_CHECK_LAUNCH("moe_experts gate_up rows={} hidden={} inter={}", a.max_rows, a.hidden, a.inter);
  grouped_gemm_kernel<false><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(down_cols)), kGemmThreads, 0,
                               s>>>(static_cast<const bf16*>(a.act), a.sorted_slots, a.block_expert, a.top_k,
                                    static_cast<const bf16*>(a.down), static_cast<bf16*>(a.out), a.hidden, a.inter);
  GRT_CUDA_CHECK_LAUNCH("moe_experts down rows={} hidden={} inter={}", a.max_rows, a.hidden, a.inter);
}

void moe_combine(Device d, const ops::MoeCombineArgs& a) {
  cudaStream_t s = launch_stream(d);
  GRT_CHECK(a.dtype == DType::BF16 && a.hidden % 8 == 0, "moe_combine on CUDA needs bf16 rows of a multiple of 8, got {} x {}",
            dtype_name(a.dtype), a.hidden);
  const int64_t cols = (a.hidden / 8 + kCombineThreads - 1) / kCombineThreads;
  check_grid("moe_combine", a.tokens, cols);
  combine_kernel<<<dim3(static_cast<unsigned>(a.tokens), static_cast<unsigned>(cols)), kCombineThreads, 0, s>>>(
      static_cast<const bf16*>(a.expert_out), a.slot_rows, a.topk_weights, static_cast<bf16*>(a.out), a.top_k,
      a.hidden);
  GRT_CUDA_CHECK_LAUNCH("moe_combine tokens={} hidden={}", a.tokens, a.hidden);
}

}  // namespace grt::cuda
