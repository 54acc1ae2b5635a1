#include "device/cuda/cuda_device.h"

#include "device/cuda/cuda_check.h"

namespace grt::cuda {

void use_device(int index) {
  int current = -1;
  GRT_CUDA_CHECK(cudaGetDevice(&current), "querying the current CUDA device before using cuda:{}", index);
  if (current != index) GRT_CUDA_CHECK(cudaSetDevice(index), "making cuda:{} the current device", index);
}

}  // namespace grt::cuda
