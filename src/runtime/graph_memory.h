// GraphMemory: the memory every graph of one ModelRunner captures into (`--graph-memory`):
//   pool — one GraphPool shared by every capture, largest first (SGLang/vLLM style);
//   vmm  — VmmSpaces: every capture (decode batch size; token count with all its pieces) in a
//          fresh virtual space over shared physical chunks, so physical memory is max(shape).
// Both serve the decode and piecewise runners of the runner. Their graphs share bytes, so they
// must never run concurrently: the memory's ReplayDomain lets one stream replay, one at a time.
#pragma once
#include <memory>
#include <string>

#include "memory/capture_memory.h"
#include "memory/replay_domain.h"
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
  // What a capture that just ended is tagged with: its VMM space id (0 for a pool).
  uint64_t capture_tag() const;
  // Why the memory of a capture tagged `tag` is gone ("" when intact; always "" for a pool).
  std::string fault(uint64_t tag) const;
  // Grows whenever some capture's memory is lost: a cheap "rescan your shapes" signal.
  uint64_t fault_count() const;
  // VMM: whether a new space may consolidate the chunks (a device-wide synchronize).
  void set_consolidation(bool allowed) const;
  // Test hook: fills every physical byte of VMM graph memory with `byte` (no-op for a pool).
  void fill_physical_for_testing(int byte) const;
  // The one stream its graphs replay on (see ReplayDomain).
  ReplayDomain& replay_domain() const { return domain_; }
  // Physical bytes held: the pool's reserved bytes, or the VMM chunks.
  size_t physical_bytes() const;
  const VmmSpaces* vmm() const { return vmm_.get(); }

 private:
  GraphMemoryMode mode_;
  std::shared_ptr<GraphPool> pool_;
  std::shared_ptr<VmmSpaces> vmm_;
  CaptureMemory memory_;
  mutable ReplayDomain domain_{"graphs of one graph memory"};
};

}  // namespace grt
