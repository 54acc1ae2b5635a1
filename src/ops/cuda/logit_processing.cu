// Penalties (one thread per generated (row, id) entry: pairs are unique, so no two threads touch
// one logit) and the min-p cut (one block per row: max, then mask), in stream order.
#include <cfloat>
#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "ops/logit_processing.h"

namespace grt::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void penalty_kernel(ops::LogitProcessArgs a) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= a.entries) return;
  const int64_t r = a.token_rows[e], id = a.token_ids[e];
  if (r < 0 || r >= a.batch || id < 0 || id >= a.vocab) return;
  float x = a.logits[r * a.vocab + id];
  const float rep = a.repetition[r];
  if (rep != 1.0f) x = x > 0 ? x / rep : x * rep;
  const int c = a.token_counts[e];
  x -= a.frequency[r] * static_cast<float>(c) + (c > 0 ? a.presence[r] : 0.0f);
  a.logits[r * a.vocab + id] = x;
}

__global__ void min_p_kernel(ops::LogitProcessArgs a) {
  const int64_t r = blockIdx.x;
  const float mp = a.min_p[r], t = a.temperature[r];
  if (!(mp > 0.0f) || !(t > 0.0f)) return;
  float* x = a.logits + r * a.vocab;
  __shared__ float sh[kThreads / 32];
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < a.vocab; i += blockDim.x) m = fmaxf(m, x[i]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = m;
  __syncthreads();
  m = sh[0];
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, sh[w]);
  if (!isfinite(m)) return;
  const float cut = m + t * logf(mp);
  for (int64_t i = threadIdx.x; i < a.vocab; i += blockDim.x)
    if (x[i] < cut) x[i] = -INFINITY;
}

}  // namespace

void process_logits(Stream& stream, Device device, const ops::LogitProcessArgs& a) {
  (void)device;
  cudaStream_t s = native_stream(stream);
  if (a.entries > 0) {
    const int64_t blocks = (a.entries + kThreads - 1) / kThreads;
    penalty_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a);
    GRT_CUDA_CHECK_LAUNCH("process_logits penalties entries={}", a.entries);
  }
  min_p_kernel<<<static_cast<unsigned>(a.batch), kThreads, 0, s>>>(a);
  GRT_CUDA_CHECK_LAUNCH("process_logits min_p rows={} vocab={}", a.batch, a.vocab);
}

}  // namespace grt::cuda
