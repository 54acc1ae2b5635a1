// How a graph runner's capture time splits into phases (graph/capture_phases.h), for the JSON
// and text reports of inspect, bench decode and bench prefill, and the capture log line.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "graph/shape_graph_runner.h"

namespace grt {

// {"wall_seconds", "instantiate_threads", "sync_each_shape", "prepare", "warmup", "memory",
//  "record", "instantiate", "instantiate_wait", "sync", "other", "per_shape"} (seconds;
// "instantiate" is worker time, off the wall-time sum, when instantiate_threads > 0; "per_shape"
// rows follow "per_shape_columns": shape, record, instantiate, sync, warm-up with staging, memory).
nlohmann::json capture_phases_json(const ShapeGraphRunner& runner);
// "record 0.210, instantiate 0.180 (2 threads, waited 0.004), warm-up 0.012, prepare 0.001,
//  memory 0.000, sync 0.003, other 0.010 s"
std::string capture_phases_text(const ShapeGraphRunner& runner);

}  // namespace grt
