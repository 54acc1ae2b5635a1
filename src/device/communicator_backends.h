// The backends connect_communicator (device/communicator.cpp) picks from; only the device layer
// sees this header. Options are checked before these are called, and size >= 2.
#pragma once
#include <memory>

#include "device/communicator.h"

namespace grt {

// TCP between processes, collectives as CPU stream tasks (device/cpu/cpu_communicator.h).
std::unique_ptr<Communicator> make_cpu_communicator(const CommunicatorOptions& options);
// NCCL (device/cuda/nccl_communicator.h); Error when graphrt was built without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(const CommunicatorOptions& options);

}  // namespace grt
