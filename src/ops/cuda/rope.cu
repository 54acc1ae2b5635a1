// Neox rotary embedding in place: one block per token over all (head, j < head_dim/2) pairs of
// q and k; each thread rotates the pair (j, j + head_dim/2) of one head in float32.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"

namespace grt::cuda {
namespace {

using namespace dense;

template <typename T>
__global__ void rope_kernel(T* q, int64_t qs, int64_t nq, T* k, int64_t ks, int64_t nk, const int32_t* positions,
                            const float* cos_sin, int64_t max_pos, int64_t hd) {
  const int64_t t = blockIdx.x;
  const int64_t pos = positions[t];
  if (pos < 0 || pos >= max_pos) return;  // validated upstream; never read out of bounds
  const int64_t half = hd / 2;
  const float* cs = cos_sin + pos * hd;
  const int64_t pairs = (nq + nk) * half;
  for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
    const int64_t head = i / half, j = i % half;
    T* p = head < nq ? q + t * qs + head * hd : k + t * ks + (head - nq) * hd;
    const float a = to_float(p[j]), b = to_float(p[j + half]);
    float lo, hi;
    rope_rotate(a, b, cs[j], cs[half + j], lo, hi);
    p[j] = from_float<T>(lo);
    p[j + half] = from_float<T>(hi);
  }
}

template <typename T>
void launch(cudaStream_t s, void* q, int64_t qs, int64_t nq, void* k, int64_t ks, int64_t nk, const int32_t* pos,
            int64_t tokens, const float* cs, int64_t max_pos, int64_t hd) {
  const int threads = row_threads((nq + nk) * (hd / 2) < 256 ? (nq + nk) * (hd / 2) : 256);
  rope_kernel<T><<<static_cast<unsigned>(tokens), threads, 0, s>>>(static_cast<T*>(q), qs, nq, static_cast<T*>(k), ks,
                                                                  nk, pos, cs, max_pos, hd);
}

}  // namespace

void apply_rope(Device d, DType dt, void* q, int64_t q_stride, int64_t q_heads, void* k, int64_t k_stride,
                int64_t k_heads, const int32_t* positions, int64_t tokens, const float* cos_sin,
                int64_t max_positions, int64_t head_dim) {
  GRT_CHECK(tokens <= 0x7fffffff, "apply_rope_: {} tokens exceed one grid", tokens);
  cudaStream_t s = dense::launch_stream(d);
  if (dt == DType::BF16)
    launch<__nv_bfloat16>(s, q, q_stride, q_heads, k, k_stride, k_heads, positions, tokens, cos_sin, max_positions,
                          head_dim);
  else if (dt == DType::F32)
    launch<float>(s, q, q_stride, q_heads, k, k_stride, k_heads, positions, tokens, cos_sin, max_positions, head_dim);
  else GRT_FAIL("apply_rope_ on CUDA supports bf16 and f32, got {}", dtype_name(dt));
  GRT_CUDA_CHECK_LAUNCH("apply_rope_ tokens={} q_heads={} k_heads={} head_dim={} dtype={}", tokens, q_heads, k_heads,
                        head_dim, dtype_name(dt));
}

}  // namespace grt::cuda
