// A read-only memory map of a whole file (RAII): weights are read in place, never copied
// into a buffer first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace grt {

class FileMap {
 public:
  // Maps `path` read-only. Throws Error naming the file when it cannot be opened or mapped.
  explicit FileMap(const std::string& path);
  ~FileMap();
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;
  FileMap(FileMap&& o) noexcept;
  FileMap& operator=(FileMap&& o) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();

  std::string path_;
  const uint8_t* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

}  // namespace grt
