// store_kv on CUDA: one block per token row, copying K and V rows in the widest unit (16 bytes
// when the row size, row strides and base addresses allow) to the slot read from out_cache_loc.
#include <algorithm>
#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "ops/cuda/attention_cuda.h"

namespace grt::cuda {
namespace {

template <typename U>
__global__ void store_kv_kernel(const U* __restrict__ k, const U* __restrict__ v, int64_t k_stride, int64_t v_stride,
                                const int32_t* __restrict__ loc, U* __restrict__ k_cache, U* __restrict__ v_cache,
                                int64_t units, int64_t num_slots) {
  const int64_t t = blockIdx.x;
  const int64_t s = loc[t];
  if (s < 0 || s >= num_slots) return;
  for (int64_t i = threadIdx.x; i < units; i += blockDim.x) {
    k_cache[s * units + i] = k[t * k_stride + i];
    v_cache[s * units + i] = v[t * v_stride + i];
  }
}

template <typename U>
void launch_store(cudaStream_t st, const ops::StoreKvArgs& a, int64_t row_bytes, int64_t ks_bytes, int64_t vs_bytes) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(U));
  const int threads = static_cast<int>(std::min<int64_t>(256, ((units + 31) / 32) * 32));
  store_kv_kernel<U><<<static_cast<unsigned>(a.rows), threads, 0, st>>>(
      static_cast<const U*>(a.k), static_cast<const U*>(a.v), ks_bytes / static_cast<int64_t>(sizeof(U)),
      vs_bytes / static_cast<int64_t>(sizeof(U)), a.loc, static_cast<U*>(a.k_cache), static_cast<U*>(a.v_cache),
      units, a.num_slots);
}

}  // namespace

void store_kv(Stream& stream, const ops::StoreKvArgs& a) {
  GRT_CHECK(a.rows < (int64_t{1} << 31), "store_kv: {} rows exceed the grid limit", a.rows);
  cudaStream_t st = native_stream(stream);
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  const int64_t row_bytes = a.width * es, ks = a.k_row_stride * es, vs = a.v_row_stride * es;
  // The widest unit dividing every size and address involved.
  uint64_t all = static_cast<uint64_t>(row_bytes | ks | vs) | reinterpret_cast<uintptr_t>(a.k) |
                 reinterpret_cast<uintptr_t>(a.v) | reinterpret_cast<uintptr_t>(a.k_cache) |
                 reinterpret_cast<uintptr_t>(a.v_cache);
  if (all % 16 == 0) launch_store<uint4>(st, a, row_bytes, ks, vs);
  else if (all % 8 == 0) launch_store<uint2>(st, a, row_bytes, ks, vs);
  else if (all % 4 == 0) launch_store<uint32_t>(st, a, row_bytes, ks, vs);
  else if (all % 2 == 0) launch_store<uint16_t>(st, a, row_bytes, ks, vs);
  else launch_store<uint8_t>(st, a, row_bytes, ks, vs);
  GRT_CUDA_CHECK_LAUNCH("store_kv rows={} width={} dtype={}", a.rows, a.width, dtype_name(a.dtype));
}

}  // namespace grt::cuda
