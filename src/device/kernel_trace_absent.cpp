// KernelTrace in a build without CUPTI (no CUDA, or a CUDA toolkit without libcupti): starting one
// is an error.
#include "core/error.h"
#include "device/kernel_trace.h"

namespace grt {

struct KernelTrace::Impl {};

KernelTrace::KernelTrace(Device device) : device_(device) {
  GRT_FAIL("kernel trace on {}: this graphrt was built without CUPTI (without CUDA, or the CUDA toolkit had no "
           "libcupti at configure time)", device.str());
}
KernelTrace::~KernelTrace() = default;
uint64_t KernelTrace::mark() { GRT_FAIL("kernel trace: built without CUPTI"); }
std::vector<KernelRecord> KernelTrace::stop() { GRT_FAIL("kernel trace: built without CUPTI"); }

}  // namespace grt
