// ByteWriter / ByteReader: the little-endian (host order; ranks of a group run one build on one
// architecture) binary framing of runner messages that rank 0 sends its followers. The reader
// checks every read against the end, so a truncated or foreign message is an Error naming what
// was being read and where, never a read past the buffer.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace grt {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(v.size());
    append(v.data(), v.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }

 private:
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  std::vector<uint8_t>& out_;
};

class ByteReader {
 public:
  // `what` names the message in errors ("runner message").
  ByteReader(const std::vector<uint8_t>& in, const char* what) : in_(in), what_(what) {}
  template <typename T>
  T get(const char* field) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> get_vector(const char* field) {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t n = get<uint64_t>(field);
    GRT_CHECK(n <= (in_.size() - pos_) / sizeof(T), "{}: {} claims {} elements but only {} bytes are left at offset {}",
              what_, field, n, in_.size() - pos_, pos_);
    std::vector<T> v(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v.data(), in_.data() + pos_, static_cast<size_t>(n) * sizeof(T));
    pos_ += static_cast<size_t>(n) * sizeof(T);
    return v;
  }
  std::string get_string(const char* field) {
    const std::vector<char> v = get_vector<char>(field);
    return std::string(v.begin(), v.end());
  }
  bool at_end() const { return pos_ == in_.size(); }
  size_t offset() const { return pos_; }
  size_t size() const { return in_.size(); }
  const char* what() const { return what_; }

 private:
  void need(size_t n, const char* field) const {
    GRT_CHECK(in_.size() - pos_ >= n, "{}: truncated reading {} ({} bytes at offset {} of {})", what_, field, n, pos_,
              in_.size());
  }
  const std::vector<uint8_t>& in_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace grt
