// Which device a piece of memory or work belongs to: "cpu" or "cuda:N". A plain value; the
// device layer gives it streams, memory and graphs. It lives in core because a Tensor must say
// where its bytes are.
#pragma once
#include <string>
#include <string_view>

namespace grt {

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  // Parses "cpu", "cuda", "cuda:N". Throws Error naming the text otherwise. Whether the device
  // exists is checked by the device layer, not here.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace grt
