// Row gather (embedding lookup, last-token rows): a byte copy of whole rows in the widest unit
// (16, 8, 4, 2 or 1 bytes) that the row size, row stride and addresses allow. Rows on grid.x,
// units over grid.y x threads.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"

namespace grt::cuda {
namespace {

constexpr int kThreads = 256;

template <typename U>
__global__ void gather_rows_kernel(U* out, const U* x, int64_t x_rows, int64_t x_stride_units,
                                   const int32_t* index, int64_t index_offset, int64_t row_units) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= row_units) return;
  const int64_t i = blockIdx.x;
  const int64_t r = index[i] - index_offset;
  U v{};  // out-of-range rows read nothing and become zeros
  if (r >= 0 && r < x_rows) v = x[r * x_stride_units + c];
  out[i * row_units + c] = v;
}

template <typename U>
void launch(cudaStream_t s, void* out, const void* x, int64_t x_rows, int64_t x_stride_bytes, const int32_t* index,
            int64_t index_offset, int64_t n, int64_t row_bytes) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(U));
  const int64_t col_blocks = (units + kThreads - 1) / kThreads;
  GRT_CHECK(n <= 0x7fffffff && col_blocks <= 65535, "gather_rows: {} rows of {} bytes exceed one grid", n, row_bytes);
  dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(col_blocks));
  gather_rows_kernel<U><<<grid, kThreads, 0, s>>>(static_cast<U*>(out), static_cast<const U*>(x), x_rows,
                                                  x_stride_bytes / static_cast<int64_t>(sizeof(U)), index, index_offset, units);
}

}  // namespace

void gather_rows(Device d, DType dt, void* out, const void* x, int64_t x_rows, int64_t x_row_stride,
                 const int32_t* index, int64_t index_offset, int64_t n, int64_t hidden) {
  cudaStream_t s = dense::launch_stream(d);
  const int64_t es = static_cast<int64_t>(dtype_size(dt));
  const int64_t row_bytes = hidden * es, stride_bytes = x_row_stride * es;
  const uint64_t all = static_cast<uint64_t>(row_bytes) | static_cast<uint64_t>(stride_bytes) |
                       reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out);
  if (all % 16 == 0) launch<uint4>(s, out, x, x_rows, stride_bytes, index, index_offset, n, row_bytes);
  else if (all % 8 == 0) launch<uint2>(s, out, x, x_rows, stride_bytes, index, index_offset, n, row_bytes);
  else if (all % 4 == 0) launch<uint32_t>(s, out, x, x_rows, stride_bytes, index, index_offset, n, row_bytes);
  else if (all % 2 == 0) launch<uint16_t>(s, out, x, x_rows, stride_bytes, index, index_offset, n, row_bytes);
  else launch<uint8_t>(s, out, x, x_rows, stride_bytes, index, index_offset, n, row_bytes);
  GRT_CUDA_CHECK_LAUNCH("gather_rows n={} rows={} hidden={} dtype={}", n, x_rows, hidden, dtype_name(dt));
}

}  // namespace grt::cuda
