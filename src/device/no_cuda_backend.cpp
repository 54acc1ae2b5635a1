// Without CUDA there is no CUDA backend; device.cpp turns the nullptr into clear errors.
#ifndef GRAPHRT_WITH_CUDA
#include "device/backend.h"

namespace grt {
Backend* cuda_backend() { return nullptr; }
}  // namespace grt
#endif
