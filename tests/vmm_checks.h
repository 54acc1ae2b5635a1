// Checks of VmmSpaces' lazy mapping shared by the memory-layer and runner tests.
#pragma once
#include <string>
#include <vector>

#include "memory/vmm_spaces.h"

namespace grt::testing {

// The end of the shortest prefix of chunks (sizes in offset order) that covers [0, high_water).
inline size_t covering_prefix_end(const std::vector<size_t>& chunk_bytes, size_t high_water) {
  size_t end = 0;
  for (size_t c : chunk_bytes) {
    if (end >= high_water) break;
    end += c;
  }
  return end;
}

// "" when every space maps exactly the chunks its blocks ever reached (no more: lazy mapping),
// else which space maps what. Spaces filled by extend_mapping() are not lazily mapped: skip them
// with `from_space`.
inline std::string lazy_mapping_error(const VmmSpaces& spaces, uint64_t from_space = 1) {
  const std::vector<size_t> chunks = spaces.chunk_bytes();
  const size_t n = spaces.stats().spaces;
  for (uint64_t id = from_space; id <= n; ++id) {
    const VmmSpaceStats s = spaces.space_stats(id);
    const size_t want = covering_prefix_end(chunks, s.high_water_bytes);
    if (s.mapped_bytes != want)
      return "space " + std::to_string(id) + " maps " + std::to_string(s.mapped_bytes) + " bytes; its blocks reached " +
             std::to_string(s.high_water_bytes) + ", covered by chunks up to " + std::to_string(want);
  }
  return "";
}

}  // namespace grt::testing
