// Kernel tracing on a CUDA device: every kernel the process runs between start and stop, graph
// kernel nodes included, with its device start / end timestamps (CUPTI's activity API, the
// concurrent-kernel kind, which keeps kernels overlapping as they would untraced). This is the
// in-graph timeline that ncu (serialised, isolated kernels) cannot give. core/kernel_timeline.h
// reduces the records.
//
// Built only into the targets that link graphrt_kernel_trace (the CLI and the CUDA tests), the one
// place that links CUPTI; a build without CUPTI (or CUDA) has a version whose constructor throws.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/device_id.h"
#include "core/kernel_timeline.h"

namespace grt {

class KernelTrace {
 public:
  // Starts recording on `device`. Throws Error when the device is no CUDA device, when graphrt
  // was built without CUDA, when CUPTI cannot start (the error names the CUPTI call and CUPTI's
  // result text) and when another KernelTrace is recording in this process.
  explicit KernelTrace(Device device);
  // Stops recording if stop() was not called (errors are dropped: a destructor cannot report).
  ~KernelTrace();
  KernelTrace(const KernelTrace&) = delete;
  KernelTrace& operator=(const KernelTrace&) = delete;

  // Synchronises the device and returns the time now in the records' clock (ns): mark before and
  // after a run of a step to get its StepWindow.
  uint64_t mark();
  // Synchronises the device, flushes, stops recording and returns the kernel records sorted by
  // start. Throws Error when CUPTI dropped records or a call fails; callable once.
  std::vector<KernelRecord> stop();

  struct Impl;

 private:
  Device device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grt
