#include "ops/scatter.h"

#include "device/stream.h"
#include "ops/cpu/scatter_cpu.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/scatter_cuda.h"
#endif

namespace grt::ops {

void scatter_i32(const Tensor& dst, const Tensor& pairs) {
  GRT_CHECK(dst.defined() && dst.dtype() == DType::I32 && dst.is_contiguous(),
            "scatter_i32: dst {} must be a contiguous i32 tensor", dst.defined() ? dst.str() : "(undefined)");
  GRT_CHECK(pairs.defined() && pairs.dtype() == DType::I64 && pairs.rank() == 2 && pairs.size(1) == 2 &&
                pairs.is_contiguous() && pairs.device() == dst.device(),
            "scatter_i32: pairs {} must be contiguous i64 [N, 2] on {}", pairs.defined() ? pairs.str() : "(undefined)",
            dst.device().str());
  const int64_t n = pairs.size(0);
  if (n == 0) return;
  Stream& s = current_stream(dst.device());
  auto* d = static_cast<int32_t*>(dst.data());
  const auto* p = pairs.data_as<int64_t>();
  if (dst.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::scatter_i32(s, d, dst.numel(), p, n);
    return;
#else
    GRT_FAIL("scatter_i32 on {}: built without CUDA", dst.str());
#endif
  }
  cpu::scatter_i32(s, d, dst.numel(), p, n);
}

}  // namespace grt::ops
