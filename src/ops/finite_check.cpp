#include "ops/finite_check.h"

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt::ops {

#ifdef GRAPHRT_WITH_CUDA
namespace cuda {
void flag_nonfinite(Device device, const void* data, DType dtype, int64_t n, int32_t* flag);
}
#endif

void flag_nonfinite(const Tensor& t, const Tensor& flags, int64_t index) {
  GRT_CHECK(t.is_contiguous(), "flag_nonfinite needs a contiguous tensor, got {}", t.str());
  GRT_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::BF16 || t.dtype() == DType::F16,
            "flag_nonfinite needs an f32/bf16/f16 tensor, got {}", t.str());
  GRT_CHECK(flags.dtype() == DType::I32 && flags.rank() == 1 && flags.is_contiguous() && index >= 0 &&
                index < flags.size(0) && flags.device() == t.device(),
            "flag_nonfinite: flag {} of {} for {}", index, flags.str(), t.str());
  if (t.numel() == 0) return;
  int32_t* flag = static_cast<int32_t*>(flags.data()) + index;
  const int64_t n = t.numel();
  if (t.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::flag_nonfinite(t.device(), t.data(), t.dtype(), n, flag);
    return;
#else
    GRT_FAIL("flag_nonfinite on {}: built without CUDA", t.str());
#endif
  }
  const void* data = t.data();
  const bool f32 = t.dtype() == DType::F32;
  // Exponent all ones: infinity or NaN.
  const uint32_t exp_mask = t.dtype() == DType::F32 ? 0x7f800000u : t.dtype() == DType::BF16 ? 0x7f80u : 0x7c00u;
  cpu::launch(current_stream(t.device()), [=] {
    bool bad = false;
    if (f32) {
      const uint32_t* p = static_cast<const uint32_t*>(data);
      for (int64_t i = 0; i < n; ++i) bad |= (p[i] & exp_mask) == exp_mask;
    } else {
      const uint16_t* p = static_cast<const uint16_t*>(data);
      for (int64_t i = 0; i < n; ++i) bad |= (p[i] & exp_mask) == exp_mask;
    }
    if (bad) *flag = 1;
  });
}

}  // namespace grt::ops
