// How CPU op implementations launch "kernels": a closure over raw pointers and sizes, enqueued
// on a CPU stream's FIFO (run later by its worker thread) or recorded when the stream captures.
#pragma once
#include <functional>

namespace grt {
class Stream;
namespace cpu {

// `stream` must be a CPU stream. The task must capture only values (pointers, sizes), never
// Tensors or references to host locals: it may run after the caller returned, and at every replay.
void launch(Stream& stream, std::function<void()> task);

}  // namespace cpu
}  // namespace grt
