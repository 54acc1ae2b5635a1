#include "bench/bench_common.h"

#if GRAPHRT_WITH_CUDA
#include <cuda_profiler_api.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <fstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "device/device.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"

namespace grt::bench {
namespace {

// The benches' median: the upper middle value for an even count (every timed figure uses it, so
// the figures of one bench compare as they always have).
double upper_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double median_ms(Device d, int warmup, int iters, const std::function<void()>& fn) {
  Stream& s = current_stream(d);
  for (int i = 0; i < warmup; ++i) fn();
  s.synchronize();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn();
    s.synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  return upper_median(std::move(t));
}

std::vector<double> graph_replay_us_per_call(Device d, int launches, int reps, const std::function<void(int)>& launch) {
  GRT_CHECK(launches >= 1 && reps >= 1, "graph replay timing needs launches >= 1 and reps >= 1, got {} and {}", launches,
            reps);
  Stream& s = current_stream(d);
  s.begin_capture();
  for (int i = 0; i < launches; ++i) launch(i);
  auto exec = s.end_capture()->instantiate();
  exec->launch(s);
  s.synchronize();
  std::vector<double> us;
  auto e0 = new_event(d, true), e1 = new_event(d, true);
  for (int r = 0; r < reps; ++r) {
    e0->record(s);
    exec->launch(s);
    e1->record(s);
    e1->synchronize();
    us.push_back(1000.0 * e0->elapsed_ms(*e1) / launches);
  }
  std::sort(us.begin(), us.end());
  return us;
}

std::vector<double> interleaved_medians_ms(Device d, int warmup, int iters,
                                           const std::vector<std::function<void()>>& fns) {
  GRT_CHECK(iters >= 1 && !fns.empty(), "interleaved timing needs iters >= 1 and a variant, got {} and {}", iters,
            fns.size());
  Stream& s = current_stream(d);
  for (const auto& fn : fns)
    for (int i = 0; i < warmup; ++i) fn();
  s.synchronize();
  std::vector<std::vector<double>> t(fns.size());
  for (int round = 0; round < iters; ++round) {
    for (size_t k = 0; k < fns.size(); ++k) {
      const size_t v = (k + static_cast<size_t>(round)) % fns.size();
      const auto a = std::chrono::steady_clock::now();
      fns[v]();
      s.synchronize();
      t[v].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
  }
  std::vector<double> medians;
  for (auto& v : t) medians.push_back(upper_median(std::move(v)));
  return medians;
}

void profiled_step(Device d, const std::function<void()>& fn) {
  const char* env = std::getenv("GRAPHRT_BENCH_PROFILE");
  if (!env || !*env || std::string(env) == "0") return;
  device_synchronize(d);
#if GRAPHRT_WITH_CUDA
  (void)cudaProfilerStart();  // no profiler attached: a no-op, not an error worth stopping for
#endif
  fn();
  device_synchronize(d);
#if GRAPHRT_WITH_CUDA
  (void)cudaProfilerStop();
#endif
}

bool profile_graph_step() {
  const char* env = std::getenv("GRAPHRT_BENCH_PROFILE");
  return env && std::string(env) == "graph";
}

double event_ms_per_call(Device d, int warmup, int iters, const std::function<void()>& fn) {
  Stream& s = current_stream(d);
  for (int i = 0; i < warmup; ++i) fn();
  auto start = new_event(d, true), end = new_event(d, true);
  start->record(s);
  for (int i = 0; i < iters; ++i) fn();
  end->record(s);
  end->synchronize();
  return static_cast<double>(start->elapsed_ms(*end)) / iters;
}

SyncStepParts sync_step_parts(Device d, int warmup, int iters, const std::function<Tensor()>& forward,
                              const std::function<Tensor(const Tensor&)>& pick) {
  GRT_CHECK(iters >= 1, "sync_step_parts needs iters >= 1, got {}", iters);
  Stream& s = current_stream(d);
  auto step = [&] { return to_host_vector<int32_t>(pick(forward())); };
  for (int i = 0; i < warmup; ++i) step();
  s.synchronize();
  auto e0 = new_event(d, true), e1 = new_event(d, true), e2 = new_event(d, true);
  std::vector<double> fwd, pk, wall;
  for (int i = 0; i < iters; ++i) {
    const auto a = std::chrono::steady_clock::now();
    e0->record(s);
    const Tensor logits = forward();
    e1->record(s);
    const Tensor ids = pick(logits);
    e2->record(s);
    (void)to_host_vector<int32_t>(ids);
    const double w = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    fwd.push_back(e0->elapsed_ms(*e1)), pk.push_back(e1->elapsed_ms(*e2)), wall.push_back(w);
  }
  SyncStepParts parts{upper_median(fwd), upper_median(pk), 0, upper_median(wall)};
  parts.readback_ms = parts.wall_ms - parts.forward_ms - parts.pick_ms;  // so that the parts add up
  return parts;
}

double copy_bandwidth_gbps(Device d) {
  const int64_t bytes = d.is_cuda() ? (int64_t{1} << 30) : (int64_t{64} << 20);
  Tensor a = zeros(Shape{bytes}, DType::U8, d), b = zeros(Shape{bytes}, DType::U8, d);
  Stream& s = current_stream(d);
  double ms = event_ms_per_call(d, 2, 10, [&] { s.copy_async(b.data(), a.data(), static_cast<size_t>(bytes)); });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e6);
}

nlohmann::json load_anchor(const std::string& path) {
  std::ifstream f(path);
  if (!f) return nullptr;
  return nlohmann::json::parse(f, nullptr, false);
}

std::vector<int> parse_int_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    try {
      size_t used = 0;
      int v = std::stoi(item, &used);
      GRT_CHECK(used == item.size() && v > 0, "'{}'", item);
      out.push_back(v);
    } catch (const std::exception&) {
      GRT_FAIL("'{}' in '{}' is not a positive integer", item, text);
    }
    pos = comma + 1;
  }
  return out;
}

}  // namespace grt::bench
