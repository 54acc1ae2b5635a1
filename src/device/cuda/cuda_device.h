// Making a CUDA device current for the calling thread before a runtime call that needs it.
#pragma once

namespace grt::cuda {

// cudaSetDevice(index) when the thread's current device differs (cudaGetDevice is a cheap,
// driver-free runtime query, so this costs nothing when the device is already current).
void use_device(int index);

}  // namespace grt::cuda
