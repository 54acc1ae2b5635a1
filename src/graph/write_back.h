// write_back(dst, src, what): puts an eager call's replay result `src` into `dst`, the result of
// the same call at capture time, whose buffers later graph segments read (seed 003 "Output
// Writeback"). Tensors are copied in place; a struct with a for_each_tensor(visitor) member is
// handled field by field (tensor fields copied in place, the other fields replaced); a map of
// name → Tensor entry by entry. A shape, dtype or key that differs from capture time is an Error
// naming `what` and the field. Any other value (no tensors in it) is replaced.
//
// A struct opts in with
//   template <class F> void for_each_tensor(F&& f) { f("logits", logits); f("hidden", hidden); }
// visiting the same fields in the same order every time.
#pragma once
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace grt {

// dst's bytes = src's bytes; same shape and dtype required. Nothing to do when they alias.
void write_back_tensor(const Tensor& dst, const Tensor& src, const std::string& what);

template <class T>
concept TensorStruct = requires(T& t) { t.for_each_tensor([](const char*, Tensor&) {}); };

inline void write_back(Tensor& dst, const Tensor& src, const std::string& what) {
  write_back_tensor(dst, src, what);
}

// A value with no tensors in it (a count, a flag) is replaced.
template <class T>
  requires(!TensorStruct<T> && !std::same_as<T, Tensor> && std::is_copy_assignable_v<T>)
void write_back(T& dst, const T& src, const std::string&) {
  dst = src;
}

template <TensorStruct T>
void write_back(T& dst, const T& src, const std::string& what) {
  std::vector<std::pair<const char*, Tensor>> kept;
  dst.for_each_tensor([&](const char* name, Tensor& t) { kept.emplace_back(name, t); });
  T fresh = src;
  size_t i = 0;
  fresh.for_each_tensor([&](const char* name, Tensor& t) {
    GRT_CHECK(i < kept.size(), "{}: field {} was not in the result at capture time", what, name);
    const auto& [kept_name, kept_tensor] = kept[i];
    GRT_CHECK(std::string(kept_name) == name, "{}: field {} where capture time had {}", what, name, kept_name);
    write_back_tensor(kept_tensor, t, what + "." + name);
    t = kept_tensor;  // keep the capture-time buffer; its bytes are now the new values
    ++i;
  });
  GRT_CHECK(i == kept.size(), "{}: {} tensor fields, capture time had {}", what, i, kept.size());
  dst = std::move(fresh);  // non-tensor fields replaced
}

// A copy of `value` whose tensors are borrowed (non-owning) views: what a recorded eager call
// keeps, so that its buffers are reused like any other intermediate of the capture once the
// captured code drops them (graphs sharing memory never run at once).
inline Tensor borrowed(const Tensor& t) { return t.defined() ? t.borrow() : t; }

template <TensorStruct T>
T borrowed(const T& value) {
  T copy = value;
  copy.for_each_tensor([](const char*, Tensor& t) { t = borrowed(t); });
  return copy;
}

template <class Map>
  requires std::same_as<typename Map::mapped_type, Tensor>
Map borrowed(const Map& value) {
  Map copy = value;
  for (auto& [key, t] : copy) t = borrowed(t);
  return copy;
}

template <class T>
  requires(!TensorStruct<T> && !std::same_as<T, Tensor> && !requires { typename T::mapped_type; })
T borrowed(const T& value) {
  return value;
}

template <class Map>
  requires std::same_as<typename Map::mapped_type, Tensor>
void write_back_map(Map& dst, const Map& src, const std::string& what) {
  GRT_CHECK(dst.size() == src.size(), "{}: {} entries, capture time had {}", what, src.size(), dst.size());
  for (const auto& [key, value] : src) {
    auto it = dst.find(key);
    GRT_CHECK(it != dst.end(), "{}: entry '{}' was not in the result at capture time", what, key);
    write_back_tensor(it->second, value, what + "['" + key + "']");
  }
}

inline void write_back(std::map<std::string, Tensor>& dst, const std::map<std::string, Tensor>& src,
                       const std::string& what) {
  write_back_map(dst, src, what);
}

inline void write_back(std::unordered_map<std::string, Tensor>& dst,
                       const std::unordered_map<std::string, Tensor>& src, const std::string& what) {
  write_back_map(dst, src, what);
}

}  // namespace grt
