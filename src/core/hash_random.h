// Counter-based random numbers: the value at (seed, index) is a pure function, so the host,
// the CPU backend and CUDA kernels produce the same deterministic values independently (used
// for random-weight models and seeded sampling).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define GRT_HOST_DEVICE __host__ __device__
#else
#define GRT_HOST_DEVICE
#endif

namespace grt {

GRT_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits (exact in float).
GRT_HOST_DEVICE inline float hash_uniform(uint64_t seed, uint64_t index) {
  uint64_t h = splitmix64(seed ^ splitmix64(index));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// center + half_width * (2u - 1): uniform in [center - half_width, center + half_width).
GRT_HOST_DEVICE inline float hash_uniform_in(uint64_t seed, uint64_t index, float center, float half_width) {
  return center + half_width * (2.0f * hash_uniform(seed, index) - 1.0f);
}

// FNV-1a of a string: per-tensor seeds from tensor names.
inline uint64_t fnv1a64(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
  return h;
}

}  // namespace grt
