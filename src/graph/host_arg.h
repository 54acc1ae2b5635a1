// Host values given to eager steps and split ops (graph/breakable.h, graph/split_ops.h).
//
// A recorded step runs again at every replay with the arguments it was recorded with: a value is
// frozen at capture. A host value the step must read live (the real batch's request count and
// lengths, not the padded ones of capture time) or must never see change is declared, never
// passed as a bare pointer (which does not compile as an eager-step argument):
//
//   op(q, host_ref("extend", &in.extend))   // read through the pointer at every replay
//   op(q, host_value("rows", &rows))        // frozen at capture; in debug mode (CapturePolicies::
//                                           // check_args) every replay compares *ptr with the
//                                           // capture-time value and fails naming both
//
// The step's function receives a HostRef<T> as `const T*`, a HostValue<T> as `const T&`.
#pragma once
#include <string>
#include <utility>

#include "core/error.h"

namespace grt {

template <class T>
class HostRef {
 public:
  HostRef(std::string name, const T* ptr) : name_(std::move(name)), ptr_(ptr) {
    GRT_CHECK(ptr_, "host_ref('{}'): a null pointer", name_);
  }
  operator const T*() const { return ptr_; }
  const T& operator*() const { return *ptr_; }
  const T* operator->() const { return ptr_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  const T* ptr_;
};

template <class T>
class HostValue {
 public:
  HostValue(std::string name, const T* source) : name_(std::move(name)), source_(source) {
    GRT_CHECK(source_, "host_value('{}'): a null pointer", name_);
    value_ = *source_;
  }
  operator const T&() const { return value_; }
  const T& value() const { return value_; }
  // The live value at the declared address.
  const T& live() const { return *source_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  const T* source_;
  T value_;
};

// A host value read through `ptr` at every replay; *ptr must outlive the graph.
template <class T>
HostRef<T> host_ref(std::string name, const T* ptr) {
  return HostRef<T>(std::move(name), ptr);
}

// A host value frozen at capture, checked against *ptr at replay in debug mode; *ptr must outlive
// the graph.
template <class T>
HostValue<T> host_value(std::string name, const T* ptr) {
  return HostValue<T>(std::move(name), ptr);
}

}  // namespace grt
