// CPU virtual memory (used by the CPU backend): PROT_NONE reservations and memfd chunks mapped
// MAP_SHARED|MAP_FIXED, so one chunk shows the same bytes at several addresses.
#pragma once
#include <cstddef>
#include <cstdint>

namespace grt::cpu {

inline constexpr size_t kVmmGranularity = size_t{2} << 20;  // 2 MiB, like CUDA's usual granularity

void* vmm_reserve(size_t bytes);
void vmm_release_range(void* base, size_t bytes);
// Returns the memfd (named "graphrt-vmm") as the handle.
uint64_t vmm_create_chunk(size_t bytes);
void vmm_release_chunk(uint64_t handle, size_t bytes);
void vmm_map(void* addr, size_t bytes, uint64_t handle);
// Replaces the mapping by PROT_NONE anonymous memory: the reservation stays.
void vmm_unmap(void* addr, size_t bytes);

// Test hook: while on, vmm_map fails (Error) at any address that held a mapping before — a
// remap, as VMM consolidation does — so tests can inject a driver failure there.
void vmm_fail_remaps_for_testing(bool on);

}  // namespace grt::cpu
