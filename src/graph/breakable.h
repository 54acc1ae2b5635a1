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
#include <vector>

#include "graph/eager_args.h"
#include "graph/host_arg.h"
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
//
// The result type must be one write_back() supports (graph/write_back.h; others do not compile).
// A capture-time result tensor that aliases an argument, or lies outside this capture's graph
// memory (a persistent input, a weight, a residual), is cloned into graph memory, so a replay
// writes its new result there and never over an input. Arguments must not be bare pointers to
// host data: declare them (graph/host_arg.h). In debug mode (CapturePolicies::check_args) every
// replay first compares the recorded arguments with their live values (graph/eager_args.h).
template <class Fn, class... Args>
auto record_eager_call(SegmentedCapture& capture, const std::string& name, const Fn& fn, Args&&... args) {
  static_assert((eager_arg_allowed<std::decay_t<Args>> && ...),
                "an eager step or split op argument is a bare pointer: declare the host value with "
                "host_ref(name, ptr) (read live at every replay) or host_value(name, ptr) (frozen at "
                "capture, checked in debug mode), graph/host_arg.h");
  using Bound = std::tuple<std::decay_t<Args>...>;
  using R = std::invoke_result_t<const Fn&, std::decay_t<Args>&...>;
  static_assert(std::is_void_v<R> || write_back_supported<R>,
                "eager step result type not supported for write-back: use a Tensor, a struct with a "
                "for_each_tensor() member, a map of them, or pair/tuple/vector/optional of those "
                "(graph/write_back.h)");
  auto bound = std::make_shared<Bound>(borrowed(std::decay_t<Args>(args))...);
  std::function<void()> check;
  if (auto c = make_arg_check(*bound)) check = [bound, c = std::move(c)] { c(); };
  if constexpr (std::is_void_v<R>) {
    capture.eager_step(name, [fn, bound] { std::apply(fn, *bound); }, std::move(check));
  } else {
    auto out = std::make_shared<std::optional<R>>();
    std::optional<R> first;  // the owning capture-time result, handed to the captured code
    const CaptureMemory* memory = &capture.memory();  // used at capture time only
    capture.eager_step(
        name,
        [fn, bound, out, name, &first, memory] {
          R result = std::apply(fn, *bound);
          if (!out->has_value()) {
            // Capture time: these buffers are what later segments read.
            std::vector<ByteRange> inputs;
            std::apply([&](auto&... a) { (collect_tensor_ranges(a, inputs), ...); }, *bound);
            own_result_buffers(result, inputs, *memory, name);
            out->emplace(borrowed(result));
            first.emplace(std::move(result));
          } else {
            write_back(**out, result, name);
          }
        },
        std::move(check));
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
