#include "core/device_id.h"

#include <charconv>

#include "core/error.h"

namespace grt {

Device Device::parse(std::string_view t) {
  if (t == "cpu") return cpu();
  if (t == "cuda") return cuda(0);
  if (t.rfind("cuda:", 0) == 0) {
    std::string_view num = t.substr(5);
    int idx = -1;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
    if (ec == std::errc() && ptr == num.data() + num.size() && idx >= 0) return cuda(idx);
  }
  GRT_FAIL("'{}' is not a device (expected cpu, cuda or cuda:N)", t);
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

}  // namespace grt
