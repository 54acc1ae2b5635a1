// write_back(dst, src, what): puts an eager call's replay result `src` into `dst`, the result of
// the same call at capture time, whose buffers later graph segments read (seed 003 "Output
// Writeback"). Supported results, recursively:
//   - a Tensor: copied in place;
//   - a struct with a for_each_tensor(visitor) member: tensor fields copied in place, the other
//     fields replaced;
//   - std::map / std::unordered_map with plain keys: entry by entry (same keys);
//   - std::pair, std::tuple: element by element; std::vector: same length, element by element;
//     std::optional: engaged at replay exactly when it was at capture time;
//   - a plain value holding no tensor (trivially copyable, std::string, or the containers above
//     of plain values): replaced.
// Any other type is refused at compile time (a struct holding a Tensor without for_each_tensor
// would otherwise be replaced, and later segments would read stale buffers). A shape, dtype, key,
// length or engagement that differs from capture time is an Error naming `what` and the field.
//
// A struct opts in with
//   template <class F> void for_each_tensor(F&& f) { f("logits", logits); f("hidden", hidden); }
// visiting the same fields in the same order every time.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "memory/capture_memory.h"

namespace grt {

// dst's bytes = src's bytes; same shape and dtype required. Nothing to do when they alias.
void write_back_tensor(const Tensor& dst, const Tensor& src, const std::string& what);

template <class T>
concept TensorStruct = requires(T& t) { t.for_each_tensor([](const char*, Tensor&) {}); };

namespace write_back_detail {
template <class T> struct is_pair : std::false_type {};
template <class A, class B> struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T> struct is_tuple : std::false_type {};
template <class... A> struct is_tuple<std::tuple<A...>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_map : std::false_type {};
template <class K, class V, class C, class A> struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};

// Holds no tensor: replaced as a whole.
template <class T>
constexpr bool plain() {
  if constexpr (std::is_same_v<T, Tensor> || TensorStruct<T>) return false;
  else if constexpr (std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>) return true;
  else if constexpr (is_pair<T>::value) return plain<typename T::first_type>() && plain<typename T::second_type>();
  else if constexpr (is_tuple<T>::value)
    return []<size_t... I>(std::index_sequence<I...>) {
      return (plain<std::tuple_element_t<I, T>>() && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else if constexpr (is_vector<T>::value || is_optional<T>::value) return plain<typename T::value_type>();
  else if constexpr (is_map<T>::value) return plain<typename T::key_type>() && plain<typename T::mapped_type>();
  else return false;
}

// Written back by write_back().
template <class T>
constexpr bool supported() {
  if constexpr (std::is_same_v<T, Tensor> || TensorStruct<T> || plain<T>()) return true;
  else if constexpr (is_pair<T>::value)
    return supported<typename T::first_type>() && supported<typename T::second_type>();
  else if constexpr (is_tuple<T>::value)
    return []<size_t... I>(std::index_sequence<I...>) {
      return (supported<std::tuple_element_t<I, T>>() && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else if constexpr (is_vector<T>::value || is_optional<T>::value) return supported<typename T::value_type>();
  else if constexpr (is_map<T>::value) return plain<typename T::key_type>() && supported<typename T::mapped_type>();
  else return false;
}

template <class K>
std::string key_str(const K& k) {
  if constexpr (std::is_same_v<K, std::string>) return "'" + k + "'";
  else if constexpr (std::is_arithmetic_v<K>) return std::to_string(k);
  else return "(a key)";
}
}  // namespace write_back_detail

// True for the result types write_back() accepts (see above).
template <class T>
inline constexpr bool write_back_supported = write_back_detail::supported<std::remove_cvref_t<T>>();

template <class T>
void write_back(T& dst, const T& src, const std::string& what) {
  using namespace write_back_detail;
  static_assert(write_back_supported<T>,
                "eager step result type not supported for write-back: use a Tensor, a struct with a "
                "for_each_tensor() member, a map of them, or pair/tuple/vector/optional of those "
                "(graph/write_back.h); a type holding a Tensor any other way would be replaced, not "
                "written back");
  if constexpr (std::is_same_v<T, Tensor>) {
    write_back_tensor(dst, src, what);
  } else if constexpr (TensorStruct<T>) {
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
  } else if constexpr (plain<T>()) {
    dst = src;
  } else if constexpr (is_pair<T>::value) {
    write_back(dst.first, src.first, what + ".first");
    write_back(dst.second, src.second, what + ".second");
  } else if constexpr (is_tuple<T>::value) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (write_back(std::get<I>(dst), std::get<I>(src), what + "[" + std::to_string(I) + "]"), ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_vector<T>::value) {
    GRT_CHECK(dst.size() == src.size(), "{}: {} elements at replay, {} at capture time", what, src.size(), dst.size());
    for (size_t i = 0; i < dst.size(); ++i) write_back(dst[i], src[i], what + "[" + std::to_string(i) + "]");
  } else if constexpr (is_optional<T>::value) {
    GRT_CHECK(dst.has_value() == src.has_value(), "{}: {} at replay, {} at capture time", what,
              src.has_value() ? "a value" : "none", dst.has_value() ? "a value" : "none");
    if (dst.has_value()) write_back(*dst, *src, what);
  } else if constexpr (is_map<T>::value) {
    GRT_CHECK(dst.size() == src.size(), "{}: {} entries, capture time had {}", what, src.size(), dst.size());
    for (const auto& [key, value] : src) {
      auto it = dst.find(key);
      GRT_CHECK(it != dst.end(), "{}: entry {} was not in the result at capture time", what, key_str(key));
      write_back(it->second, value, what + "[" + key_str(key) + "]");
    }
  }
}

// Calls f(path, tensor) for every tensor of a supported value, recursively (undefined ones too).
template <class T, class F>
void for_each_result_tensor(T& value, const std::string& path, F&& f) {
  using namespace write_back_detail;
  static_assert(write_back_supported<T>, "for_each_result_tensor: type not supported (see write_back)");
  if constexpr (std::is_same_v<T, Tensor>) {
    f(path, value);
  } else if constexpr (TensorStruct<T>) {
    value.for_each_tensor([&](const char* name, Tensor& t) { f(path + "." + name, t); });
  } else if constexpr (plain<T>()) {
    // no tensors
  } else if constexpr (is_pair<T>::value) {
    for_each_result_tensor(value.first, path + ".first", f);
    for_each_result_tensor(value.second, path + ".second", f);
  } else if constexpr (is_tuple<T>::value) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (for_each_result_tensor(std::get<I>(value), path + "[" + std::to_string(I) + "]", f), ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_vector<T>::value) {
    for (size_t i = 0; i < value.size(); ++i) for_each_result_tensor(value[i], path + "[" + std::to_string(i) + "]", f);
  } else if constexpr (is_optional<T>::value) {
    if (value.has_value()) for_each_result_tensor(*value, path, f);
  } else if constexpr (is_map<T>::value) {
    for (auto& [key, t] : value) for_each_result_tensor(t, path + "[" + key_str(key) + "]", f);
  }
}

// The bytes a tensor's storage spans, for alias checks.
struct ByteRange {
  const char* begin = nullptr;
  const char* end = nullptr;
};

// Appends the storage ranges of the tensors in `value` (any eager-step argument; types holding
// tensors in ways write_back() does not support contribute nothing).
template <class T>
void collect_tensor_ranges(const T& value, std::vector<ByteRange>& out) {
  if constexpr (write_back_supported<T>) {
    T copy = value;  // for_each_result_tensor visits mutable values
    for_each_result_tensor(copy, "", [&](const std::string&, Tensor& t) {
      if (!t.defined()) return;
      const char* b = static_cast<const char*>(t.storage()->data());
      out.push_back({b, b + t.storage()->bytes()});
    });
  }
}

// Capture time: replaces every result tensor that overlaps an input range or lies outside
// `memory` by a copy allocated now (the eager step runs with its stream routed to the graph
// memory), so replays write their results into graph memory and never over an input.
void own_result_tensor(Tensor& t, const std::vector<ByteRange>& inputs, const CaptureMemory& memory,
                       const std::string& what);

template <class T>
void own_result_buffers(T& result, const std::vector<ByteRange>& inputs, const CaptureMemory& memory,
                        const std::string& what) {
  for_each_result_tensor(result, what, [&](const std::string& path, Tensor& t) { own_result_tensor(t, inputs, memory, path); });
}

// A copy of `value` whose tensors are borrowed (non-owning) views: what a recorded eager call
// keeps, so that its buffers are reused like any other intermediate of the capture once the
// captured code drops them (graphs sharing memory never run at once). Types write_back() does
// not support are copied as they are (arguments may be anything copyable).
inline Tensor borrowed(const Tensor& t) { return t.defined() ? t.borrow() : t; }

template <class T>
T borrowed(const T& value) {
  T copy = value;
  if constexpr (write_back_supported<T>) for_each_result_tensor(copy, "", [](const std::string&, Tensor& t) { t = borrowed(t); });
  return copy;
}

}  // namespace grt
