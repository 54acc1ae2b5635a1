#include "runtime/graph_memory.h"

#include "core/error.h"

namespace grt {

GraphMemoryMode parse_graph_memory_mode(const std::string& text) {
  if (text == "pool") return GraphMemoryMode::kPool;
  if (text == "vmm") return GraphMemoryMode::kVmm;
  GRT_FAIL("--graph-memory must be pool or vmm, got '{}'", text);
}

const char* graph_memory_mode_name(GraphMemoryMode mode) { return mode == GraphMemoryMode::kVmm ? "vmm" : "pool"; }

GraphMemory::GraphMemory(Device device, GraphMemoryMode mode, size_t vmm_budget_bytes) : mode_(mode) {
  if (mode == GraphMemoryMode::kVmm) {
    vmm_ = std::make_shared<VmmSpaces>(device, vmm_budget_bytes);
    memory_ = CaptureMemory::of_arena(vmm_);
  } else {
    pool_ = GraphPool::create(device);
    memory_ = CaptureMemory::of_pool(pool_);
  }
}

void GraphMemory::begin_capture() const {
  if (vmm_) vmm_->switch_to_new_virtual_space();
}

uint64_t GraphMemory::capture_tag() const { return vmm_ ? vmm_->current_space() : 0; }

std::string GraphMemory::fault(uint64_t tag) const { return vmm_ && tag != 0 ? vmm_->space_fault(tag) : std::string(); }

uint64_t GraphMemory::fault_count() const { return vmm_ ? vmm_->faults() : 0; }

void GraphMemory::set_consolidation(bool allowed) const {
  if (vmm_) vmm_->set_consolidation(allowed);
}

void GraphMemory::fill_physical_for_testing(int byte) const {
  if (vmm_) vmm_->fill_physical_for_testing(byte);
}

size_t GraphMemory::physical_bytes() const { return vmm_ ? vmm_->stats().physical_bytes : pool_->stats().reserved; }

}  // namespace grt
