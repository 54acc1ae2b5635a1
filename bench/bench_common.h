// Shared pieces of the benchmarks: timing on a device, the measured copy bandwidth (the
// roofline's denominator) and the PyTorch anchors to compare against.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/device_id.h"
#include "core/tensor.h"

namespace grt::bench {

// Median milliseconds of `iters` runs of fn (after `warmup` runs), each synchronised on the
// device so host overhead counts, as it does for a real step.
double median_ms(Device device, int warmup, int iters, const std::function<void()>& fn);
// Median milliseconds of each of `fns` (synchronised as median_ms), timed in turns: `warmup` runs
// of each, then `iters` rounds that run every fn once, the order rotating by one each round. Clock
// or power drift over a measurement (long prefills heat the GPU) then falls on every variant alike
// instead of on whichever is timed last.
std::vector<double> interleaved_medians_ms(Device device, int warmup, int iters,
                                           const std::vector<std::function<void()>>& fns);
// Average milliseconds of one call of fn, timed with device events around `iters` back-to-back
// calls (kernel time; launch gaps included only where the GPU waits for them).
double event_ms_per_call(Device device, int warmup, int iters, const std::function<void()>& fn);
// A synchronised step taken apart by device events (medians over `iters` steps, ms). `forward`
// enqueues a step and returns its logits; `pick` enqueues the kernels that choose the next ids
// from them and returns the ids, which are then copied to the host (that copy waits for the device).
//   forward_ms:  from the step's start on an idle device to its logits (host staging, uploads and
//                launches included wherever the device waits for them);
//   pick_ms:     the choosing kernels after the logits;
//   readback_ms: the median wall time less the two medians above: the ids' copy, the wait's
//                wake-up, the events' own cost.
struct SyncStepParts {
  double forward_ms = 0, pick_ms = 0, readback_ms = 0, wall_ms = 0;
};
SyncStepParts sync_step_parts(Device device, int warmup, int iters, const std::function<Tensor()>& forward,
                              const std::function<Tensor(const Tensor&)>& pick);
// Microseconds per call of `launch`, sorted: `launches` back-to-back calls launch(0), launch(1), ...
// captured once into a CUDA graph on the device's current stream (not the legacy default stream),
// replayed once untimed, then `reps` times between two device events.
std::vector<double> graph_replay_us_per_call(Device device, int launches, int reps,
                                             const std::function<void(int)>& launch);
// Device-to-device copy bandwidth in GB/s, counting bytes read plus written.
double copy_bandwidth_gbps(Device device);
// The anchor JSON (bench/anchors/torch_baseline_*.json), or null when the file is missing.
nlohmann::json load_anchor(const std::string& path);
std::vector<int> parse_int_list(const std::string& text);
// With GRAPHRT_BENCH_PROFILE set (not 0): runs fn once more between cudaProfilerStart/Stop, the
// device synchronised on both sides, so `ncu --profile-from-start off` sees only that step's
// kernels (graph nodes included), not the weight fill, the captures or the timed steps.
// Otherwise does nothing.
void profiled_step(Device device, const std::function<void()>& fn);
// True when GRAPHRT_BENCH_PROFILE is "graph": a bench that profiles an eager step by default
// (prefill) profiles a graph step instead.
bool profile_graph_step();

}  // namespace grt::bench

namespace grt {
// `graphrt bench decode` (bench/bench_decode.cpp).
void register_bench_decode(CLI::App& bench);
// `graphrt bench breakable` (bench/bench_breakable.cpp).
void register_bench_breakable(CLI::App& bench);
// `graphrt bench prefill` (bench/bench_prefill.cpp).
void register_bench_prefill(CLI::App& bench);
// `graphrt bench attention` (bench/bench_attention.cpp).
void register_bench_attention(CLI::App& bench);
// `graphrt bench memory` (bench/bench_memory.cpp).
void register_bench_memory(CLI::App& bench);
// bench_serving.cpp
void register_bench_serving(CLI::App& bench);
// `graphrt bench tokenizer` (bench/bench_tokenizer.cpp).
void register_bench_tokenizer(CLI::App& bench);
// `graphrt bench stream` (bench/bench_stream.cpp).
void register_bench_stream(CLI::App& bench);
void register_bench_pdl(CLI::App& bench);
}  // namespace grt
