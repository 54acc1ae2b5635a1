// A step's kernel timeline from traced kernel records (device/kernel_trace.h records them on the
// GPU): the records of N runs of one step, matched kernel by kernel, reduced to one slot per
// kernel of the step with the median duration and the median gap to the kernel before it. Pure
// C++: the aggregation is tested on the CPU with synthetic records.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace grt {

// One kernel execution as the device saw it.
struct KernelRecord {
  std::string name;      // short name: no namespace, template arguments or parameters
  std::string function;  // the demangled full name (the raw name where it does not demangle)
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream = 0;
  uint32_t graph_id = 0;       // 0: not launched from a graph
  uint64_t graph_node_id = 0;  // 0: not launched from a graph
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
};

// The host-side marks around one run of the step, in the records' clock: every kernel of the run
// starts at or after begin_ns and before end_ns.
struct StepWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

// One kernel of the step (its position in the first run's start order) over all runs.
struct KernelSlot {
  int pos = 0;
  std::string name;
  std::string function;
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
  uint32_t stream = 0;
  bool in_graph = false;
  double dur_us = 0;  // median of end - start
  // Median of start - the previous slot's end (negative: the two overlapped, as PDL lets them);
  // 0 for the first slot.
  double gap_us = 0;
  // Median of end - the previous slot's end: what this kernel added to the step's critical path
  // when the step is one chain (the first slot: its duration).
  double advance_us = 0;
};

struct StepTimeline {
  int steps = 0;
  std::vector<KernelSlot> slots;
  double span_us = 0;  // median of the last end - the first start
  double busy_us = 0;  // median of the summed durations
  double lead_us = 0;  // median of the first start - the step's begin mark (launch and uploads)
};

// Matches the records to the windows (a record belongs to the window its start falls in) and
// reduces them to one slot per kernel. Kernels launched from a graph are matched across runs by
// (graph id, node id), the others by their order among the run's non-graph kernels; the first
// run's start order gives the positions. Errors: no window, a window with end <= begin or
// overlapping the one before, a record with end < start or no timestamps, a record outside every
// window, runs with different kernels (count, names or grids), an empty run.
StepTimeline step_timeline(const std::vector<KernelRecord>& records, const std::vector<StepWindow>& windows);

// The median of v (the mean of the two middle values when v has an even count); v must not be empty.
double median_of(std::vector<double> v);

// "void ns::(anonymous namespace)::kern<128, float>(int, float const*)" -> "kern"; a name that is
// no C++ signature (cuBLAS's "nvjet_tst_...") is returned unchanged.
std::string short_kernel_name(const std::string& demangled);

}  // namespace grt
