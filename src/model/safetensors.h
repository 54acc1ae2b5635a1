// Reading safetensors files in place: a file is memory-mapped, its JSON header validated
// (dtypes, shapes, offsets inside the file, sizes matching shape x dtype, no overlaps), and
// each tensor is a pointer into the map. A model folder is one model.safetensors or shards
// listed by model.safetensors.index.json. Every error names the file and, where there is
// one, the tensor.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "model/file_map.h"

namespace grt {

// "F32", "F16", "BF16", "I32", "I64", "U8", "BOOL" ↔ DType. parse throws Error naming the text
// (and `what`, e.g. "tensor x in file y") for unknown or unsupported dtypes (F64, I8, F8_*...).
DType parse_safetensors_dtype(std::string_view text, const std::string& what);
const char* safetensors_dtype_name(DType dt);

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;  // inside the file map; read-only; may be unaligned in foreign files
  size_t nbytes = 0;
  std::string file;  // path of the file holding it
};

class SafetensorsFile {
 public:
  // Maps and validates the whole header. Throws Error naming the file (and tensor).
  explicit SafetensorsFile(const std::string& path);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return map_.path(); }
  // In data order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  FileMap map_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

// The tensors of a model folder: model.safetensors.index.json (sharded) if present, else
// model.safetensors. `path` may also name a single .safetensors file.
class SafetensorsFolder {
 public:
  explicit SafetensorsFolder(const std::string& path);

  const std::string& path() const { return path_; }
  // The files read, in order.
  std::vector<std::string> files() const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // nullptr when absent.
  const SafetensorsTensor* find(const std::string& name) const;
  // Throws Error naming the tensor and the folder when absent.
  const SafetensorsTensor& at(const std::string& name) const;
  // All tensor names, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return index_.size(); }

  // A CPU tensor viewing the mapped bytes (read-only!); it keeps the file mapped while alive.
  // Not counted in bytes_read(): the caller reads them.
  Tensor host_tensor(const std::string& name) const;
  // Converts the tensor's elements to `dst_dtype` into `dst` (numel elements).
  void read_into(const std::string& name, void* dst, DType dst_dtype) const;
  std::vector<float> read_floats(const std::string& name) const;
  // Converts the block rows [row0, row0 + rows) x columns [col0, col0 + cols) of the tensor, seen
  // as a matrix [dim 0, product of the other dims] (a 1-D tensor is one column), into `dst`
  // (rows x cols elements, row-major). Reads only the block's bytes from the map: whole rows in
  // one run, a column range row by row (a tensor-parallel rank's slice). Error naming the tensor
  // when the block leaves it.
  void read_block_into(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols, void* dst,
                       DType dst_dtype) const;

  // Bytes of tensor data read from the maps so far by read_into / read_block_into / read_floats
  // (the source bytes, before any dtype conversion). Not synchronised: count from one thread.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  struct Slot {
    const SafetensorsTensor* tensor;
    std::shared_ptr<SafetensorsFile> file;
  };
  void add_file(std::shared_ptr<SafetensorsFile> file);

  std::string path_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, Slot> index_;
  mutable uint64_t bytes_read_ = 0;
};

}  // namespace grt
