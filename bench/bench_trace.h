// `--trace PATH` of bench decode / prefill: after the timed loops, runs each point's step (a graph
// step through the runner) again under one KernelTrace (device/kernel_trace.h, CUPTI), and reduces
// each point's runs to the in-graph kernel timeline (core/kernel_timeline.h) and its per-layer
// view (core/kernel_layers.h): JSON into PATH, the layer tables on the terminal. One trace session
// for the whole process, started after every timed loop, so the timed numbers never run traced.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device_id.h"
#include "core/kernel_timeline.h"

namespace grt {
class KernelTrace;
}

namespace grt::bench {

struct TraceOpts {
  std::string path;  // empty: no trace
  int steps = 20;    // traced runs of each point's step
  void add_to(CLI::App& cmd);
  bool on() const { return !path.empty(); }
  // Throws Error when a trace is asked for on a device that cannot trace (before any timing).
  void check(Device device) const;
};

class StepTrace {
 public:
  // Starts the trace on `device` (throws as KernelTrace does: no CUDA device, CUPTI unusable).
  StepTrace(Device device, const TraceOpts& opts);
  ~StepTrace();
  // Runs `step` twice (warm-up, outside the windows), then opts.steps times, each run in a window
  // of its own. `point` names the point in the JSON ({"bs": 1}, {"tokens": 256}).
  void run(nlohmann::json point, const std::function<void()>& step);
  // Stops the trace and reduces each point (`layers` decoder layers) into a JSON array of
  // {point..., "timeline": {...}, "layers": {...} or "layers_error": "..."}, or {point...,
  // "timeline_error": "...", the first records} where the runs do not reduce; fills `tables` with
  // each point's text table.
  nlohmann::json finish(int layers, std::vector<std::string>& tables);

 private:
  struct Point {
    nlohmann::json point;
    std::vector<StepWindow> windows;
  };
  const TraceOpts opts_;
  std::unique_ptr<KernelTrace> trace_;
  std::vector<Point> points_;
};

// Writes {"bench": name, ...meta, "points": points} to opts.path and prints the tables (to stderr
// when the bench prints JSON on stdout); then throws Error when the file could not be written or a
// point has no timeline.
void write_trace(const TraceOpts& opts, const std::string& bench, nlohmann::json meta, nlohmann::json points,
                 const std::vector<std::string>& tables, bool json_on_stdout);

}  // namespace grt::bench
