// Argument checks every communicator backend makes before a device collective, so a wrong call is
// refused the same way (naming the op, the rank and the tensors) on CPU and CUDA.
#pragma once
#include <string>

#include "core/tensor.h"

namespace grt {

class Communicator;

// "f32[4, 8] (128 bytes)"
std::string describe_tensor(const Tensor& t);
// t is defined, contiguous, on comm.device() and f32/bf16/f16.
void check_collective_tensor(const Communicator& comm, const char* op, const Tensor& t);
// in and out pass check_collective_tensor, have one dtype, and out is [size * in.size(0), in's other dims].
void check_all_gather(const Communicator& comm, const Tensor& in, const Tensor& out);
// 0 <= root < comm.size().
void check_root(const Communicator& comm, const char* op, int root);

}  // namespace grt
