// Breakable graphs (seed 003): model and op code marks what must not be captured.
//
//   auto topk = eager_on_graph("dynamic_topk", [](const Tensor& x) { ... host decisions ... });
//   Tensor y = topk(x);   // a plain call, except inside a breakable capture
//   break_graph();        // a segment boundary with nothing in between
//
// Inside a breakable SegmentedCapture the marked call ends the current segment, runs eagerly,
// is recorded with copies of its arguments (tensors share their buffers, so at replay the call
// sees the values the segments before it produced) and the next segment begins. At replay the
// call runs again and its result is written back into the capture-time result's buffers
// (graph/write_back.h), which the later segments read. Outside a breakable capture — no capture,
// or a capture that is not breakable — the wrapper is a plain call: one thread-local check.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "graph/segmented_capture.h"
#include "graph/write_back.h"

namespace grt {

// True while this thread runs a breakable segmented capture.
inline bool breakable_capture_active() {
  SegmentedCapture* c = SegmentedCapture::current();
  return c && c->policy().breakable;
}

// A segment boundary in a breakable capture; nothing otherwise.
void break_graph();

// Runs fn(args...) as a recorded eager step of `capture` and returns its capture-time result
// (see above). The record keeps its arguments and the capture-time result with every tensor
// borrowed: their memory is reused like any intermediate's once the captured code drops them,
// so whatever a recorded call touches must be graph memory of this capture, persistent buffers
// or weights — things that live as long as the graph.
template <class Fn, class... Args>
auto record_eager_call(SegmentedCapture& capture, const std::string& name, const Fn& fn, Args&&... args) {
  using Bound = std::tuple<std::decay_t<Args>...>;
  using R = std::invoke_result_t<const Fn&, std::decay_t<Args>&...>;
  auto bound = std::make_shared<Bound>(borrowed(std::decay_t<Args>(args))...);
  if constexpr (std::is_void_v<R>) {
    capture.eager_step(name, [fn, bound] { std::apply(fn, *bound); });
  } else {
    auto out = std::make_shared<std::optional<R>>();
    std::optional<R> first;  // the owning capture-time result, handed to the captured code
    capture.eager_step(name, [fn, bound, out, name, &first] {
      R result = std::apply(fn, *bound);
      if (!out->has_value()) {
        // Capture time: these buffers are what later segments read.
        out->emplace(borrowed(result));
        first.emplace(std::move(result));
      } else {
        write_back(**out, result, name);
      }
    });
    return R(std::move(*first));
  }
}

template <class Fn>
class EagerOnGraph {
 public:
  EagerOnGraph(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    if (!breakable_capture_active()) return std::invoke(fn_, std::forward<Args>(args)...);
    return record_eager_call(*SegmentedCapture::current(), name_, fn_, std::forward<Args>(args)...);
  }

 private:
  std::string name_;
  Fn fn_;
};

// Wraps `fn` so that it runs eagerly between segments of a breakable capture (see above).
template <class Fn>
EagerOnGraph<Fn> eager_on_graph(std::string name, Fn fn) {
  return EagerOnGraph<Fn>(std::move(name), std::move(fn));
}

}  // namespace grt
