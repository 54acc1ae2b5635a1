#include "device/cpu/cpu_vmm.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/logging.h"

namespace grt::cpu {
namespace {
const int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

std::mutex g_hook_mu;
bool g_fail_remaps = false;
std::set<void*> g_mapped_before;  // addresses mapped at least once (tracked while the hook exists)

void check_granular(const char* what, size_t bytes) {
  GRT_CHECK(bytes > 0 && bytes % kVmmGranularity == 0, "{} of {} bytes: not a positive multiple of {} bytes", what,
            bytes, kVmmGranularity);
}
}  // namespace

void* vmm_reserve(size_t bytes) {
  check_granular("reserving a virtual range", bytes);
  void* p = ::mmap(nullptr, bytes, PROT_NONE, kReserveFlags, -1, 0);
  GRT_CHECK(p != MAP_FAILED, "mmap(PROT_NONE) reserving {} bytes failed: {}", bytes, std::strerror(errno));
  return p;
}

// Release paths run in destructors: they log instead of throwing.
void vmm_release_range(void* base, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);  // the addresses may be reserved afresh later
    char* b = static_cast<char*>(base);
    g_mapped_before.erase(g_mapped_before.lower_bound(b), g_mapped_before.lower_bound(b + bytes));
  }
  if (::munmap(base, bytes) != 0)
    GRT_ERROR("munmap releasing the {}-byte virtual range at {} failed: {}", bytes, base, std::strerror(errno));
}

uint64_t vmm_create_chunk(size_t bytes) {
  check_granular("creating a physical chunk", bytes);
  int fd = ::memfd_create("graphrt-vmm", MFD_CLOEXEC);
  GRT_CHECK(fd >= 0, "memfd_create for a {}-byte chunk failed: {}", bytes, std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    GRT_FAIL("ftruncate of a memfd to {} bytes failed: {}", bytes, std::strerror(err));
  }
  return static_cast<uint64_t>(fd);
}

void vmm_release_chunk(uint64_t handle, size_t bytes) {
  if (::close(static_cast<int>(handle)) != 0)
    GRT_ERROR("close of the memfd {} of a {}-byte chunk failed: {}", handle, bytes, std::strerror(errno));
}

void vmm_map(void* addr, size_t bytes, uint64_t handle) {
  check_granular("mapping a chunk", bytes);
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);
    GRT_CHECK(!(g_fail_remaps && g_mapped_before.count(addr)),
              "mmap of {} bytes of memfd {} at {} failed: injected remap failure (test hook)", bytes, handle, addr);
    g_mapped_before.insert(addr);
  }
  void* p = ::mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, static_cast<int>(handle), 0);
  GRT_CHECK(p != MAP_FAILED, "mmap(MAP_SHARED|MAP_FIXED) of {} bytes of memfd {} at {} failed: {}", bytes, handle,
            addr, std::strerror(errno));
}

void vmm_unmap(void* addr, size_t bytes) {
  void* p = ::mmap(addr, bytes, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED)
    GRT_ERROR("mmap(PROT_NONE|MAP_FIXED) unmapping {} bytes at {} failed: {}", bytes, addr, std::strerror(errno));
}

void vmm_fail_remaps_for_testing(bool on) {
  std::lock_guard<std::mutex> lock(g_hook_mu);
  g_fail_remaps = on;
}

}  // namespace grt::cpu
