// Writing safetensors files: a header (padded to 8 bytes, so every tensor stays aligned) and
// the tensors' bytes in the order given. Data comes from a fill callback, chunk by chunk, so
// multi-gigabyte random models are written without holding them in memory. Files appear
// atomically (written to a temporary name, then renamed).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace grt {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

// Fills elements [first, first + count) of entry `index` into `dst` (in the entry's dtype).
using SafetensorsFill = std::function<void(size_t index, int64_t first, int64_t count, void* dst)>;

// Writes one file. Names must be unique and not "__metadata__".
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                       const SafetensorsFill& fill,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// A tensor in host memory (numel x dtype_size bytes at `data`).
struct HostTensorRef {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;
};
void write_safetensors(const std::string& path, const std::vector<HostTensorRef>& tensors);

// Writes <dir>/model-0000i-of-0000n.safetensors shards of at most `max_shard_bytes` of data
// each (a larger tensor gets a shard of its own) plus <dir>/model.safetensors.index.json, as
// Hugging Face does. Returns the shard file names.
std::vector<std::string> write_safetensors_sharded(const std::string& dir, const std::vector<SafetensorsEntry>& entries,
                                                   const SafetensorsFill& fill, size_t max_shard_bytes);

}  // namespace grt
