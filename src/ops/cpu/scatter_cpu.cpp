#include "ops/cpu/scatter_cpu.h"

#include "device/cpu/cpu_launch.h"

namespace grt::cpu {

void scatter_i32(Stream& stream, int32_t* dst, int64_t numel, const int64_t* pairs, int64_t n) {
  launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = pairs[2 * i];
      if (at >= 0 && at < numel) dst[at] = static_cast<int32_t>(pairs[2 * i + 1]);
    }
  });
}

}  // namespace grt::cpu
