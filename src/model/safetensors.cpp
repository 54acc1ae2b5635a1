#include "model/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace grt {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
// The safetensors reference implementation refuses larger headers too.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr const char* kSingleFile = "model.safetensors";
}  // namespace

DType parse_safetensors_dtype(std::string_view t, const std::string& what) {
  if (t == "F32") return DType::F32;
  if (t == "F16") return DType::F16;
  if (t == "BF16") return DType::BF16;
  if (t == "I32") return DType::I32;
  if (t == "I64") return DType::I64;
  if (t == "U8") return DType::U8;
  if (t == "BOOL") return DType::Bool;
  static const char* kKnown[] = {"F64", "I8", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                                 "F6_E3M2", "C64"};
  for (const char* k : kKnown)
    if (t == k) GRT_FAIL("{}: dtype '{}' is not supported (F32, F16, BF16, I32, I64, U8, BOOL are)", what, t);
  GRT_FAIL("{}: unknown dtype '{}'", what, t);
}

const char* safetensors_dtype_name(DType dt) {
  switch (dt) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

namespace {

// Validates one header entry and returns it with its [begin, end) inside the data section.
SafetensorsTensor parse_entry(const std::string& file, const std::string& name, const json& e, uint64_t data_size,
                              uint64_t& begin, uint64_t& end) {
  const std::string what = fmt::format("tensor '{}' in file '{}'", name, file);
  GRT_CHECK(e.is_object(), "{}: header entry must be an object, got {}", what, e.dump());
  auto dt = e.find("dtype");
  GRT_CHECK(dt != e.end() && dt->is_string(), "{}: header entry has no 'dtype' string", what);
  SafetensorsTensor t;
  t.name = name;
  t.file = file;
  t.dtype = parse_safetensors_dtype(dt->get<std::string>(), what);

  auto sh = e.find("shape");
  GRT_CHECK(sh != e.end() && sh->is_array(), "{}: header entry has no 'shape' list", what);
  std::vector<int64_t> dims;
  unsigned __int128 numel = 1;
  for (const json& d : *sh) {
    GRT_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0),
              "{}: shape {} has a non-integer or negative extent", what, sh->dump());
    uint64_t v = d.get<uint64_t>();
    GRT_CHECK(v < (1ull << 48), "{}: shape {} has an absurd extent", what, sh->dump());
    dims.push_back(static_cast<int64_t>(v));
    numel *= v;
    GRT_CHECK(numel < (static_cast<unsigned __int128>(1) << 62), "{}: shape {} is too large", what, sh->dump());
  }
  t.shape = Shape(std::move(dims));

  auto off = e.find("data_offsets");
  GRT_CHECK(off != e.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
                (*off)[1].is_number_unsigned(),
            "{}: 'data_offsets' must be two non-negative integers, got {}", what,
            off == e.end() ? std::string("nothing") : off->dump());
  begin = (*off)[0].get<uint64_t>();
  end = (*off)[1].get<uint64_t>();
  GRT_CHECK(begin <= end, "{}: data_offsets [{}, {}] run backwards", what, begin, end);
  GRT_CHECK(end <= data_size, "{}: data_offsets [{}, {}] reach beyond the {} data bytes in the file (truncated file?)",
            what, begin, end, data_size);
  const uint64_t expect = static_cast<uint64_t>(numel) * dtype_size(t.dtype);
  GRT_CHECK(end - begin == expect, "{}: data_offsets [{}, {}] hold {} bytes but {} {} needs {}", what, begin, end,
            end - begin, t.shape.str(), safetensors_dtype_name(t.dtype), expect);
  t.nbytes = static_cast<size_t>(expect);
  return t;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : map_(path) {
  const size_t size = map_.size();
  GRT_CHECK(size >= 8, "'{}' is {} bytes: too short for a safetensors file (truncated?)", path, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | map_.data()[i];  // little-endian u64
  GRT_CHECK(n <= size - 8, "'{}': header length {} is beyond the file size {} (truncated or not safetensors)", path, n,
            size);
  GRT_CHECK(n <= kMaxHeaderBytes, "'{}': header length {} is over the {} byte limit", path, n, kMaxHeaderBytes);
  const char* text = reinterpret_cast<const char*>(map_.data() + 8);
  json header;
  try {
    header = json::parse(text, text + n);
  } catch (const json::parse_error& e) {
    GRT_FAIL("'{}': garbled safetensors header (not valid JSON): {}", path, e.what());
  }
  GRT_CHECK(header.is_object(), "'{}': safetensors header must be a JSON object, got {}", path, header.type_name());

  const uint8_t* data = map_.data() + 8 + n;
  const uint64_t data_size = size - 8 - n;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      GRT_CHECK(it->is_object(), "'{}': __metadata__ must be an object of strings", path);
      for (auto m = it->begin(); m != it->end(); ++m) {
        GRT_CHECK(m->is_string(), "'{}': __metadata__ entry '{}' must be a string", path, m.key());
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    uint64_t b = 0, e = 0;
    SafetensorsTensor t = parse_entry(path, it.key(), *it, data_size, b, e);
    t.data = data + b;
    ranges.push_back({b, e, tensors_.size()});
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const Range &p = ranges[i - 1], &c = ranges[i];
    GRT_CHECK(p.end <= c.begin || p.begin == p.end || c.begin == c.end,
              "'{}': tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", path, tensors_[p.index].name, p.begin, p.end,
              tensors_[c.index].name, c.begin, c.end);
  }
  // Data order, so readers walk the file forwards.
  std::vector<SafetensorsTensor> ordered;
  ordered.reserve(tensors_.size());
  for (const Range& r : ranges) ordered.push_back(std::move(tensors_[r.index]));
  tensors_ = std::move(ordered);
  for (size_t i = 0; i < tensors_.size(); ++i) by_name_[tensors_[i].name] = i;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

// ---- folder ------------------------------------------------------------------------------------

namespace {

json read_json_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  GRT_CHECK(in, "cannot read '{}'", file);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::parse_error& e) {
    GRT_FAIL("'{}': not valid JSON: {}", file, e.what());
  }
}

}  // namespace

void SafetensorsFolder::add_file(std::shared_ptr<SafetensorsFile> file) {
  for (const SafetensorsTensor& t : file->tensors()) {
    auto [it, fresh] = index_.emplace(t.name, Slot{&t, file});
    GRT_CHECK(fresh, "tensor '{}' is in both '{}' and '{}'", t.name, it->second.file->path(), file->path());
  }
  files_.push_back(std::move(file));
}

SafetensorsFolder::SafetensorsFolder(const std::string& path) : path_(path) {
  if (fs::is_regular_file(path)) {
    add_file(std::make_shared<SafetensorsFile>(path));
    return;
  }
  GRT_CHECK(fs::is_directory(path), "model folder '{}' does not exist", path);
  const fs::path dir(path);
  const std::string index_file = (dir / kIndexFile).string();
  if (!fs::exists(index_file)) {
    const std::string single = (dir / kSingleFile).string();
    GRT_CHECK(fs::exists(single), "model folder '{}' has neither {} nor {}", path, kSingleFile, kIndexFile);
    add_file(std::make_shared<SafetensorsFile>(single));
    return;
  }
  json index = read_json_file(index_file);
  GRT_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
            "'{}': has no 'weight_map' object", index_file);
  const json& wm = index["weight_map"];
  std::vector<std::string> shard_names;
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    GRT_CHECK(it->is_string(), "'{}': weight_map entry '{}' must name a file", index_file, it.key());
    std::string f = it->get<std::string>();
    // Shards live in the folder itself; refuse paths that would leave it.
    GRT_CHECK(!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..",
              "'{}': weight_map entry '{}' names '{}', not a file in the folder", index_file, it.key(), f);
    if (std::find(shard_names.begin(), shard_names.end(), f) == shard_names.end()) shard_names.push_back(f);
  }
  std::sort(shard_names.begin(), shard_names.end());
  for (const std::string& f : shard_names) {
    const std::string shard = (dir / f).string();
    GRT_CHECK(fs::exists(shard), "'{}' lists shard '{}', which is missing from the folder", index_file, f);
    add_file(std::make_shared<SafetensorsFile>(shard));
  }
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    const std::string shard = (dir / it->get<std::string>()).string();
    const SafetensorsTensor* t = find(it.key());
    GRT_CHECK(t != nullptr, "tensor '{}' is listed in '{}' but missing from '{}'", it.key(), index_file, shard);
    GRT_CHECK(t->file == shard, "tensor '{}' is listed in '{}' as in '{}' but is in '{}'", it.key(), index_file, shard,
              t->file);
  }
}

std::vector<std::string> SafetensorsFolder::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

const SafetensorsTensor* SafetensorsFolder::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second.tensor;
}

const SafetensorsTensor& SafetensorsFolder::at(const std::string& name) const {
  const SafetensorsTensor* t = find(name);
  GRT_CHECK(t != nullptr, "tensor '{}' is missing from '{}'", name, path_);
  return *t;
}

std::vector<std::string> SafetensorsFolder::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, slot] : index_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

Tensor SafetensorsFolder::host_tensor(const std::string& name) const {
  const SafetensorsTensor& t = at(name);
  std::shared_ptr<SafetensorsFile> keep = index_.at(name).file;
  // The deleter only drops the file reference: the bytes belong to the map.
  auto storage = std::make_shared<Storage>(const_cast<void*>(t.data), t.nbytes, Device::cpu(),
                                           [keep](void*) mutable { keep.reset(); });
  return Tensor(std::move(storage), t.shape, t.dtype);
}

namespace {
// n elements at `src` (src_dtype) into `dst` (dst_dtype).
void convert_run(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n) {
  const size_t bytes = n * dtype_size(src_dtype);
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, bytes);
  } else if (reinterpret_cast<uintptr_t>(src) % dtype_size(src_dtype) == 0) {
    convert_elements(src, src_dtype, dst, dst_dtype, n);
  } else {
    // Foreign files may leave tensors unaligned; convert from an aligned copy.
    std::vector<uint8_t> tmp(bytes + 8);
    void* aligned = tmp.data() + (8 - reinterpret_cast<uintptr_t>(tmp.data()) % 8) % 8;
    std::memcpy(aligned, src, bytes);
    convert_elements(aligned, src_dtype, dst, dst_dtype, n);
  }
}
}  // namespace

void SafetensorsFolder::read_into(const std::string& name, void* dst, DType dst_dtype) const {
  const SafetensorsTensor& t = at(name);
  convert_run(t.data, t.dtype, dst, dst_dtype, static_cast<size_t>(t.shape.numel()));
  bytes_read_ += t.nbytes;
}

void SafetensorsFolder::read_block_into(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                        void* dst, DType dst_dtype) const {
  const SafetensorsTensor& t = at(name);
  const int64_t all_rows = t.shape.rank() == 0 ? 1 : t.shape[0];
  const int64_t all_cols = all_rows == 0 ? 0 : t.shape.numel() / all_rows;
  GRT_CHECK(row0 >= 0 && rows >= 0 && col0 >= 0 && cols >= 0 && row0 + rows <= all_rows && col0 + cols <= all_cols,
            "tensor '{}' {} in '{}': the block rows [{}, {}) x columns [{}, {}) leaves its {} x {} elements", name,
            t.shape.str(), t.file, row0, row0 + rows, col0, col0 + cols, all_rows, all_cols);
  const size_t es = dtype_size(t.dtype), out_es = dtype_size(dst_dtype);
  const auto* src = static_cast<const uint8_t*>(t.data);
  auto* out = static_cast<uint8_t*>(dst);
  if (col0 == 0 && cols == all_cols) {
    convert_run(src + static_cast<size_t>(row0 * all_cols) * es, t.dtype, out, dst_dtype,
                static_cast<size_t>(rows * cols));
  } else {
    for (int64_t r = 0; r < rows; ++r)
      convert_run(src + static_cast<size_t>((row0 + r) * all_cols + col0) * es, t.dtype,
                  out + static_cast<size_t>(r * cols) * out_es, dst_dtype, static_cast<size_t>(cols));
  }
  bytes_read_ += static_cast<uint64_t>(rows * cols) * es;
}

std::vector<float> SafetensorsFolder::read_floats(const std::string& name) const {
  const SafetensorsTensor& t = at(name);
  std::vector<float> out(static_cast<size_t>(t.shape.numel()));
  read_into(name, out.data(), DType::F32);
  return out;
}

}  // namespace grt
