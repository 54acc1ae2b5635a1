// GraphMemory: the memory every graph of one ModelRunner captures into (`--graph-memory`):
//   pool — one GraphPool shared by every capture, largest first (SGLang/vLLM style);
//   vmm  — VmmSpaces: every capture (decode batch size; token count with all its pieces) in a
//          fresh virtual space over shared physical chunks, so physical memory is max(shape).
// Both serve the decode and piecewise runners of the runner; they run on one stream, so their
// graphs never run concurrently (one memory domain per stream).
#pragma once
#include <memory>
#include <string>

#include "memory/capture_memory.h"
#include "memory/vmm_spaces.h"

namespace grt {

enum class GraphMemoryMode { kPool, kVmm };
GraphMemoryMode parse_graph_memory_mode(const std::string& text);  // "pool" | "vmm", else Error
const char* graph_memory_mode_name(GraphMemoryMode mode);

class GraphMemory {
 public:
  // `vmm_budget_bytes`: the most physical memory VMM spaces may take (0: unlimited).
  GraphMemory(Device device, GraphMemoryMode mode, size_t vmm_budget_bytes);

  GraphMemoryMode mode() const { return mode_; }
  const CaptureMemory& capture_memory() const { return memory_; }
  // Call before each shape's capture: VMM switches to a new space; a pool does nothing.
  void begin_capture() const;
  // Physical bytes held: the pool's reserved bytes, or the VMM chunks.
  size_t physical_bytes() const;
  const VmmSpaces* vmm() const { return vmm_.get(); }

 private:
  GraphMemoryMode mode_;
  std::shared_ptr<GraphPool> pool_;
  std::shared_ptr<VmmSpaces> vmm_;
  CaptureMemory memory_;
};

}  // namespace grt
