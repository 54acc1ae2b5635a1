#include "model/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "model/safetensors.h"

namespace grt {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
// Elements filled per callback: bounds the writer's buffer (64 MiB of f32).
constexpr int64_t kChunkElements = 16 << 20;

size_t entry_bytes(const SafetensorsEntry& e) { return static_cast<size_t>(e.shape.numel()) * dtype_size(e.dtype); }
}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                       const SafetensorsFill& fill, const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    GRT_CHECK(!e.name.empty() && e.name != "__metadata__", "cannot write a tensor named '{}' to '{}'", e.name, path);
    GRT_CHECK(seen.insert(e.name).second, "tensor '{}' given twice for '{}'", e.name, path);
    const uint64_t n = entry_bytes(e);
    header[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)}, {"shape", e.shape.dims()},
                      {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // data starts 8-byte aligned

  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    GRT_CHECK(out, "cannot write '{}'", tmp);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < entries.size(); ++i) {
      const SafetensorsEntry& e = entries[i];
      const int64_t numel = e.shape.numel();
      const size_t es = dtype_size(e.dtype);
      for (int64_t first = 0; first < numel; first += kChunkElements) {
        const int64_t count = std::min(kChunkElements, numel - first);
        buf.resize(static_cast<size_t>(count) * es);
        fill(i, first, count, buf.data());
        out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
      }
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      GRT_FAIL("failed writing '{}' (disk full?)", tmp);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  GRT_CHECK(!ec, "cannot rename '{}' to '{}': {}", tmp, path, ec.message());
}

void write_safetensors(const std::string& path, const std::vector<HostTensorRef>& tensors) {
  std::vector<SafetensorsEntry> entries;
  for (const HostTensorRef& t : tensors) entries.push_back({t.name, t.dtype, t.shape});
  write_safetensors(path, entries, [&](size_t i, int64_t first, int64_t count, void* dst) {
    const size_t es = dtype_size(tensors[i].dtype);
    std::memcpy(dst, static_cast<const uint8_t*>(tensors[i].data) + static_cast<size_t>(first) * es,
                static_cast<size_t>(count) * es);
  });
}

std::vector<std::string> write_safetensors_sharded(const std::string& dir, const std::vector<SafetensorsEntry>& entries,
                                                   const SafetensorsFill& fill, size_t max_shard_bytes) {
  GRT_CHECK(max_shard_bytes > 0, "shard size must be positive");
  // Greedy split in order: a shard closes when the next tensor would overflow it.
  std::vector<std::vector<size_t>> shards;
  size_t bytes = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t n = entry_bytes(entries[i]);
    if (shards.empty() || (bytes > 0 && bytes + n > max_shard_bytes)) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(i);
    bytes += n;
  }
  if (shards.empty()) shards.emplace_back();
  fs::create_directories(dir);
  std::vector<std::string> names;
  json weight_map = json::object();
  size_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    std::vector<SafetensorsEntry> part;
    for (size_t i : shards[s]) {
      part.push_back(entries[i]);
      weight_map[entries[i].name] = name;
      total += entry_bytes(entries[i]);
    }
    const std::vector<size_t>& ids = shards[s];
    write_safetensors((fs::path(dir) / name).string(), part,
                      [&](size_t i, int64_t first, int64_t count, void* dst) { fill(ids[i], first, count, dst); });
    names.push_back(name);
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  std::ofstream out(index_path, std::ios::binary | std::ios::trunc);
  GRT_CHECK(out, "cannot write '{}'", index_path);
  out << index.dump(2) << "\n";
  out.close();
  GRT_CHECK(out, "failed writing '{}'", index_path);
  return names;
}

}  // namespace grt
