// Checking CUDA runtime and driver calls: an Error says which call failed, with the CUDA error
// name and text, and what graphrt was doing.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "core/error.h"

namespace grt::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line,
                                   const std::string& what);
[[noreturn]] void throw_driver_error(CUresult err, const char* call, const char* file, int line,
                                     const std::string& what);

}  // namespace grt::cuda

// GRT_CUDA_CHECK(cudaMalloc(&p, n), "allocating {} bytes", n);
#define GRT_CUDA_CHECK(call, ...)                                                                  \
  do {                                                                                             \
    cudaError_t grt_err_ = (call);                                                                 \
    if (grt_err_ != cudaSuccess)                                                                   \
      ::grt::cuda::throw_cuda_error(grt_err_, #call, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)
#define GRT_CU_CHECK(call, ...)                                                                    \
  do {                                                                                             \
    CUresult grt_res_ = (call);                                                                    \
    if (grt_res_ != CUDA_SUCCESS)                                                                  \
      ::grt::cuda::throw_driver_error(grt_res_, #call, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)
// After a kernel launch: GRT_CUDA_CHECK_LAUNCH("rms_norm rows={} hidden={}", rows, hidden);
#define GRT_CUDA_CHECK_LAUNCH(...) GRT_CUDA_CHECK(cudaGetLastError(), __VA_ARGS__)
