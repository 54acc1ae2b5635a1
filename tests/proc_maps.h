// What /proc says about this process's memfd-backed VMM chunks (the CPU backend names them
// "graphrt-vmm"): tests check that every mapping and chunk is gone after destruction.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace grt::testing {

inline std::string read_maps() {
  std::ifstream f("/proc/self/maps");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Lines of /proc/self/maps that show a memfd chunk ("graphrt-vmm"): one per chunk mapping.
inline size_t vmm_map_lines() {
  std::istringstream in(read_maps());
  std::string line;
  size_t n = 0;
  while (std::getline(in, line))
    if (line.find("graphrt-vmm") != std::string::npos) ++n;
  return n;
}

// The /proc/self/maps line covering `addr`, or "" when nothing is at that address.
inline std::string maps_line(const void* addr) {
  std::istringstream in(read_maps());
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) return line;
  }
  return "";
}
inline bool shows_chunk(const void* addr) { return maps_line(addr).find("graphrt-vmm") != std::string::npos; }

inline size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

}  // namespace grt::testing
