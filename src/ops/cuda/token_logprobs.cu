// CUDA token log-probabilities: one block per requested row. Max and sum of exponentials by
// block reductions; the top k by k passes, each finding the best token strictly after the
// previous one in (logit desc, id asc) order, so no sort and no scratch memory (k <= 20).
#include <cmath>
#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "ops/cuda/token_logprobs_cuda.h"

namespace grt::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

struct Best {
  float v;
  int i;
};

// a before b in (value desc, index asc); an empty slot (i < 0) comes last.
__device__ bool before(Best a, Best b) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  return a.v != b.v ? a.v > b.v : a.i < b.i;
}

__device__ Best block_best(Best m, Best* sh) {
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, m.v, o), __shfl_xor_sync(0xffffffffu, m.i, o)};
    if (before(other, m)) m = other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < kWarps ? sh[lane] : Best{0.0f, -1};
    for (int o = 16; o > 0; o >>= 1) {
      Best other{__shfl_xor_sync(0xffffffffu, m.v, o), __shfl_xor_sync(0xffffffffu, m.i, o)};
      if (before(other, m)) m = other;
    }
    if (lane == 0) sh[0] = m;
  }
  __syncthreads();
  const Best r = sh[0];
  __syncthreads();
  return r;
}

__device__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? sh[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  const float r = sh[0];
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kThreads) token_logprobs_kernel(ops::TokenLogprobArgs a) {
  __shared__ Best sh_best[kWarps];
  __shared__ float sh_sum[kWarps];
  const int64_t j = blockIdx.x;
  const int32_t row = a.rows[j];
  const int n = static_cast<int>(a.vocab);
  const float* x = a.logits + static_cast<int64_t>(row) * n;
  Best m{0.0f, -1};
  for (int i = threadIdx.x; i < n; i += kThreads)
    if (!isnan(x[i]) && before(Best{x[i], i}, m)) m = Best{x[i], i};
  m = block_best(m, sh_best);
  const float mx = m.i >= 0 ? m.v : -INFINITY;
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads)
    if (!isnan(x[i])) s += expf(x[i] - mx);
  const float lse = mx + logf(block_sum(s, sh_sum));
  if (threadIdx.x == 0) a.logprob[j] = x[a.ids[row]] - lse;
  Best prev = m;
  for (int t = 0; t < a.k; ++t) {
    if (t > 0) {
      Best b{0.0f, -1};
      if (prev.i >= 0)
        for (int i = threadIdx.x; i < n; i += kThreads) {
          const Best c{x[i], i};
          if (!isnan(c.v) && before(prev, c) && before(c, b)) b = c;
        }
      prev = block_best(b, sh_best);
    }
    if (threadIdx.x == 0) {
      a.top_ids[j * a.k + t] = prev.i;
      a.top_logprob[j * a.k + t] = prev.i >= 0 ? prev.v - lse : -INFINITY;
    }
  }
}

}  // namespace

void token_logprobs(Stream& stream, const ops::TokenLogprobArgs& a) {
  if (a.m == 0) return;
  token_logprobs_kernel<<<static_cast<unsigned>(a.m), kThreads, 0, native_stream(stream)>>>(a);
  GRT_CUDA_CHECK_LAUNCH("token_logprobs rows={} vocab={} k={}", a.m, a.vocab, a.k);
}

}  // namespace grt::cuda
