// What a recorded eager step keeps of its arguments for the debug check (CapturePolicies::
// check_args): the C++ form of the seeds' "replay input address equals capture address". At
// capture each argument's identity is snapshotted — a tensor's address, shape and strides, a
// plain value's bytes or value, a host_value()'s capture-time value; make_arg_check() returns a
// function that, at every replay, compares them with the arguments the step is about to run
// with (and a host_value() with its live source) and throws naming the argument.
#pragma once
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "graph/host_arg.h"

namespace grt {

namespace eager_args_detail {
template <class T> struct is_host_ref : std::false_type {};
template <class T> struct is_host_ref<HostRef<T>> : std::true_type {};
template <class T> struct is_host_value : std::false_type {};
template <class T> struct is_host_value<HostValue<T>> : std::true_type {};

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) return fmt::format("{}", v);
  else if constexpr (std::is_same_v<T, std::string>) return "'" + v + "'";
  else return "(a value of " + std::to_string(sizeof(T)) + " bytes)";
}

// Bitwise for trivially copyable values (a NaN equals itself), == for strings; other types are
// not compared (their == may not even compile).
template <class T>
constexpr bool comparable = std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>;

template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) return a == b;
  else if constexpr (std::is_trivially_copyable_v<T>) return std::memcmp(&a, &b, sizeof(T)) == 0;
  else return true;
}

// Returns a check of argument `i` (what it points at in `bound` at replay).
template <class A>
std::function<void()> check_one(const A& arg, size_t i) {
  const std::string label = fmt::format("argument {}", i);
  if constexpr (std::is_same_v<A, Tensor>) {
    const void* data = arg.defined() ? arg.data() : nullptr;
    const std::string was = arg.defined() ? arg.str() : std::string("undefined");
    const std::vector<int64_t> strides = arg.defined() ? arg.strides() : std::vector<int64_t>{};
    return [&arg, label, data, was, strides] {
      const void* now = arg.defined() ? arg.data() : nullptr;
      GRT_CHECK(now == data && (!arg.defined() || (arg.str() == was && arg.strides() == strides)),
                "{} (a tensor) was {} at {} at capture and is {} at {} now: a replay must see the "
                "capture-time buffers",
                label, was, data, arg.defined() ? arg.str() : std::string("undefined"), now);
    };
  } else if constexpr (is_host_value<A>::value) {
    static_assert(comparable<std::remove_cvref_t<decltype(arg.value())>>,
                  "host_value() needs a trivially copyable value or a std::string (it is compared at replay)");
    return [&arg, label] {
      GRT_CHECK(same(arg.live(), arg.value()),
                "{} (host value '{}') was {} at capture and is {} now: it is frozen at capture; pass it "
                "with host_ref() if the step must read it live, or keep it constant for this graph",
                label, arg.name(), show(arg.value()), show(arg.live()));
    };
  } else if constexpr (is_host_ref<A>::value) {
    return {};  // read live by design
  } else if constexpr (comparable<A>) {
    A snapshot = arg;
    return [&arg, label, snapshot] {
      GRT_CHECK(same(arg, snapshot), "{} was {} at capture and is {} now", label, show(snapshot), show(arg));
    };
  } else {
    return {};
  }
}
}  // namespace eager_args_detail

// Whether A may be an eager-step argument: not a bare pointer to host data (declare those).
template <class A>
inline constexpr bool eager_arg_allowed =
    !std::is_pointer_v<A> || std::is_function_v<std::remove_pointer_t<A>>;

// The check of a recorded step's arguments (see above); `bound` must outlive it (the step's
// recorded tuple). Empty when there is nothing to check.
template <class Tuple>
std::function<void()> make_arg_check(const Tuple& bound) {
  std::vector<std::function<void()>> checks;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (checks.push_back(eager_args_detail::check_one(std::get<I>(bound), I)), ...);
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
  std::erase_if(checks, [](const auto& c) { return !c; });
  if (checks.empty()) return {};
  return [checks = std::move(checks)] {
    for (const auto& c : checks) c();
  };
}

}  // namespace grt
