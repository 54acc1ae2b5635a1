// Split ops (piecewise graphs, seeds 000/001): ops that end a piece. Model code wraps such an op
// with split_op(name, fn); in a capture whose policies include split_ops a call to a
// registered split op ends the current segment, runs the op eagerly, records it and begins the
// next segment — the same recording as eager_on_graph (graph/breakable.h), chosen by a
// different policy. Anywhere else the wrapper is a plain call.
//
// At replay the op runs again with the arguments it was recorded with: tensors share their
// buffers (persistent inputs and graph memory), so it reads what the piece before it wrote; a
// pointer argument (e.g. to the runner's live attention metadata) lets it see the real batch's
// host values instead of the padded ones of capture time.
//
// The registry holds "attention" by default; all-reduce and MoE dispatch register themselves
// when they exist. It is process-wide and thread-safe.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "graph/breakable.h"

namespace grt {

// Names of the ops that end a piece.
std::vector<std::string> split_op_names();
// Replaces the registry (e.g. to test a configuration); an empty list disables splitting.
void set_split_ops(std::vector<std::string> names);
void register_split_op(const std::string& name);
bool is_split_op(const std::string& name);

// True while this thread runs a piecewise capture and `name` is a split op.
bool splits_here(const std::string& name);

template <class Fn>
class SplitOp {
 public:
  SplitOp(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    if (!splits_here(name_)) return std::invoke(fn_, std::forward<Args>(args)...);
    return record_eager_call(*SegmentedCapture::current(), name_, fn_, std::forward<Args>(args)...);
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Fn fn_;
};

template <class Fn>
SplitOp<Fn> split_op(std::string name, Fn fn) {
  return SplitOp<Fn>(std::move(name), std::move(fn));
}

}  // namespace grt
