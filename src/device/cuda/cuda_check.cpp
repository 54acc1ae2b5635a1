#include "device/cuda/cuda_check.h"

#include "device/cuda/driver_api.h"

namespace grt::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line, const std::string& what) {
  // A failed runtime call also sets the thread's "last error"; clear it (when not sticky) so a
  // later GRT_CUDA_CHECK_LAUNCH does not report this failure again against an innocent kernel.
  (void)cudaGetLastError();
  throw_error(file, line,
              fmt::format("{}: {} failed: {} ({})", what, call, cudaGetErrorName(err), cudaGetErrorString(err)));
}

void throw_driver_error(CUresult err, const char* call, const char* file, int line, const std::string& what) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    const DriverApi& api = driver_api();
    if (api.get_error_name(err, &name) != CUDA_SUCCESS) name = nullptr;
    if (api.get_error_string(err, &text) != CUDA_SUCCESS) text = nullptr;
  } catch (const Error&) {
    // No driver to name the code: the number still identifies it.
  }
  throw_error(file, line,
              fmt::format("{}: {} failed: {} ({})", what, call, name ? name : fmt::format("CUresult {}", int(err)),
                          text ? text : "no description"));
}

}  // namespace grt::cuda
