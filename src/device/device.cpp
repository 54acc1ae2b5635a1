#include "device/device.h"

#include "core/error.h"

#include "device/backend.h"
#include "device/capture_state.h"

namespace grt {

Backend& backend(DeviceType type) {
  if (type == DeviceType::CPU) return cpu_backend();
  Backend* b = cuda_backend();
  GRT_CHECK(b, "CUDA was requested but this graphrt was built without CUDA");
  return *b;
}

int device_count(DeviceType type) {
  if (type == DeviceType::CPU) return 1;
  Backend* b = cuda_backend();
  return b ? b->device_count() : 0;
}

bool cuda_available() { return device_count(DeviceType::CUDA) > 0; }

Device default_device() { return cuda_available() ? Device::cuda(0) : Device::cpu(); }

void check_device(Device d) {
  if (d.is_cpu()) {
    GRT_CHECK(d.index == 0, "device cpu:{} does not exist (only cpu)", d.index);
    return;
  }
  GRT_CHECK(cuda_backend(), "device {} requested but this graphrt was built without CUDA", d.str());
  int n = cuda_backend()->device_count();
  GRT_CHECK(n > 0, "device {} requested but this machine has no usable CUDA device", d.str());
  GRT_CHECK(d.index >= 0 && d.index < n, "device {} requested but this machine has {} CUDA device(s)", d.str(), n);
}

std::string device_name(Device d) {
  check_device(d);
  return backend(d.type).name(d.index);
}

size_t device_total_memory(Device d) {
  check_device(d);
  return backend(d.type).total_memory(d.index);
}

void device_synchronize(Device d) {
  refuse_during_capture("device synchronize");
  backend(d.type).synchronize(d.index);
}

void* device_malloc(Device d, size_t bytes) { return backend(d.type).malloc(d.index, bytes); }

void device_free(Device d, void* p) {
  if (p) backend(d.type).free(d.index, p);
}

}  // namespace grt
