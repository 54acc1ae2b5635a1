// KernelTrace in a build without CUDA: there is nothing to trace, so starting one is an error.
#include "core/error.h"
#include "device/kernel_trace.h"

namespace grt {

struct KernelTrace::Impl {};

KernelTrace::KernelTrace(Device device) : device_(device) {
  GRT_FAIL("kernel trace on {}: graphrt was built without CUDA (the trace records CUDA kernels through CUPTI)",
           device.str());
}
KernelTrace::~KernelTrace() = default;
uint64_t KernelTrace::mark() { GRT_FAIL("kernel trace: built without CUDA"); }
std::vector<KernelRecord> KernelTrace::stop() { GRT_FAIL("kernel trace: built without CUDA"); }

}  // namespace grt
