// The CPU Backend: host memory, worker-thread streams, and memfd-based virtual memory.
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "device/backend.h"
#include "device/capture_state.h"
#include "device/cpu/cpu_event.h"
#include "device/cpu/cpu_stream.h"
#include "device/cpu/cpu_vmm.h"

namespace grt {
namespace cpu {
namespace {

constexpr size_t kAlignment = 256;

class CpuBackend : public Backend {
 public:
  int device_count() override { return 1; }
  std::string name(int) override { return "cpu"; }

  size_t total_memory(int) override {
    long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    GRT_CHECK(pages > 0 && page > 0, "sysconf could not tell the physical memory size");
    return static_cast<size_t>(pages) * static_cast<size_t>(page);
  }

  void synchronize(int) override {
    refuse_during_capture("device synchronize");
    auto streams = live_streams();
    for (auto& s : streams) s->drain();
    for (auto& s : streams) s->errors()->rethrow();
  }

  void* malloc(int, size_t bytes) override {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    GRT_CHECK(p, "cpu allocation of {} bytes failed (out of host memory)", bytes);
    return p;
  }

  void free(int, void* ptr) override {
    // Like cudaFree, wait for queued work first: it may still touch the memory.
    for (auto& s : live_streams())
      if (!s->is_own_worker()) s->drain();
    std::free(ptr);
  }

  std::shared_ptr<Stream> new_stream(int) override {
    auto s = std::make_shared<CpuStream>();
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(streams_, [](const std::weak_ptr<CpuStream>& w) { return w.expired(); });
    streams_.push_back(s);
    return s;
  }

  std::unique_ptr<Event> new_event(int, bool timing) override { return std::make_unique<CpuEvent>(timing); }

  size_t vmm_granularity(int) override { return kVmmGranularity; }
  void* vmm_reserve(int, size_t bytes) override { return cpu::vmm_reserve(bytes); }
  void vmm_release_range(int, void* base, size_t bytes) override { cpu::vmm_release_range(base, bytes); }
  uint64_t vmm_create_chunk(int, size_t bytes) override { return cpu::vmm_create_chunk(bytes); }
  void vmm_release_chunk(int, uint64_t handle, size_t bytes) override { cpu::vmm_release_chunk(handle, bytes); }
  void vmm_map(int, void* addr, size_t bytes, uint64_t handle) override { cpu::vmm_map(addr, bytes, handle); }
  void vmm_unmap(int, void* addr, size_t bytes) override { cpu::vmm_unmap(addr, bytes); }

 private:
  // Strong references taken under the lock, waited on outside it (a task may create streams).
  std::vector<std::shared_ptr<CpuStream>> live_streams() {
    std::vector<std::shared_ptr<CpuStream>> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : streams_)
      if (auto s = w.lock()) out.push_back(std::move(s));
    return out;
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<CpuStream>> streams_;
};

}  // namespace
}  // namespace cpu

Backend& cpu_backend() {
  static auto* b = new cpu::CpuBackend();  // leaked: streams may outlive static destruction
  return *b;
}

}  // namespace grt
