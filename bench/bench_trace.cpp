#include "bench/bench_trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/kernel_layers.h"
#include "device/kernel_trace.h"

namespace grt::bench {
namespace {

nlohmann::json slot_json(const KernelSlot& s) {
  return {{"pos", s.pos},       {"name", s.name},         {"function", s.function.substr(0, 200)},
          {"grid", s.grid},     {"block", s.block},       {"stream", s.stream},
          {"graph", s.in_graph}, {"dur_us", s.dur_us},    {"gap_us", s.gap_us},
          {"advance_us", s.advance_us}};
}

nlohmann::json timeline_json(const StepTimeline& t) {
  nlohmann::json j = {{"steps", t.steps},     {"kernels", t.slots.size()}, {"span_us", t.span_us},
                      {"busy_us", t.busy_us}, {"lead_us", t.lead_us},      {"slots", nlohmann::json::array()}};
  for (const KernelSlot& s : t.slots) j["slots"].push_back(slot_json(s));
  return j;
}

nlohmann::json layers_json(const LayerView& v) {
  nlohmann::json j = {{"layers", v.layers},       {"period", v.period},   {"first_slot", v.first_slot},
                      {"anchor", v.anchor},       {"head_us", v.head_us}, {"layers_us", v.layers_us},
                      {"tail_us", v.tail_us},     {"layer_us", v.layer_us},
                      {"positions", nlohmann::json::array()}};
  for (const LayerPosition& p : v.positions)
    j["positions"].push_back({{"pos", p.pos},
                              {"name", p.name},
                              {"grid", p.grid},
                              {"varies", p.varies},
                              {"dur_us", p.dur_us},
                              {"gap_us", p.gap_us},
                              {"advance_us", p.advance_us},
                              {"advance_sum_us", p.advance_sum_us}});
  for (const char* part : {"head", "tail"}) {
    j[part] = nlohmann::json::array();
    for (const KernelSlot& s : part[0] == 'h' ? v.head : v.tail)
      j[part].push_back({{"name", s.name}, {"grid", s.grid}, {"dur_us", s.dur_us}, {"advance_us", s.advance_us}});
  }
  return j;
}

}  // namespace

void TraceOpts::add_to(CLI::App& cmd) {
  cmd.add_option("--trace", path,
                 "after the timed loops, trace each point's graph step with CUPTI (CUDA only) and write the in-graph "
                 "kernel timeline and per-layer table as JSON to this file");
  cmd.add_option("--trace-steps", steps, "traced runs of each point's step (medians over them)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
}

void TraceOpts::check(Device device) const {
  GRT_CHECK(!on() || device.is_cuda(), "--trace {}: tracing records CUDA kernels (CUPTI), the bench runs on {}", path,
            device.str());
}

StepTrace::StepTrace(Device device, const TraceOpts& opts)
    : opts_(opts), trace_(std::make_unique<KernelTrace>(device)) {}

StepTrace::~StepTrace() = default;

void StepTrace::run(nlohmann::json point, const std::function<void()>& step) {
  for (int i = 0; i < 2; ++i) step();
  Point p{std::move(point), {}};
  for (int i = 0; i < opts_.steps; ++i) {
    const uint64_t begin = trace_->mark();
    step();
    p.windows.push_back({begin, trace_->mark()});
  }
  points_.push_back(std::move(p));
}

nlohmann::json StepTrace::finish(int layers, std::vector<std::string>& tables) {
  const std::vector<KernelRecord> records = trace_->stop();
  nlohmann::json out = nlohmann::json::array();
  for (const Point& p : points_) {
    // This point's records only: the warm-ups and other points fall outside its windows.
    std::vector<KernelRecord> mine;
    for (const KernelRecord& r : records)
      if (r.start_ns >= p.windows.front().begin_ns && r.start_ns < p.windows.back().end_ns) mine.push_back(r);
    StepTimeline t;
    nlohmann::json row = p.point;
    try {
      t = step_timeline(mine, p.windows);
    } catch (const Error& e) {  // the other points still reduce; write_trace fails after writing
      row["timeline_error"] = e.what();
      row["records"] = mine.size();
      for (size_t i = 0; i < std::min<size_t>(mine.size(), 8); ++i)  // where they fell, for the diagnosis
        row["first_records"].push_back({{"name", mine[i].name},
                                        {"start_ns", mine[i].start_ns - p.windows.front().begin_ns},
                                        {"end_ns", mine[i].end_ns - p.windows.front().begin_ns}});
      tables.push_back(fmt::format("trace {}: {} records, no timeline: {}\n", p.point.dump(), mine.size(), e.what()));
      out.push_back(std::move(row));
      continue;
    }
    row["timeline"] = timeline_json(t);
    // Mark to mark around each traced run (launch, the kernels, the sync): next to the timed step,
    // what tracing added.
    std::vector<double> window_us;
    for (const StepWindow& w : p.windows) window_us.push_back(static_cast<double>(w.end_ns - w.begin_ns) / 1000.0);
    row["window_us"] = median_of(window_us);
    std::string table;
    try {  // a step without a repeating layer block still has its timeline
      const LayerView v = layer_view(t, layers);
      row["layers"] = layers_json(v);
      table = layer_table_text(t, v);
    } catch (const Error& e) {
      row["layers_error"] = e.what();
      table = fmt::format("no layer view: {}\nstep: {} kernels, span {:.1f} us, busy {:.1f} us\n", e.what(),
                          t.slots.size(), t.span_us, t.busy_us);
    }
    row["table"] = table;
    tables.push_back(fmt::format("trace {}: traced runs {:.1f} us mark to mark\n{}", p.point.dump(),
                                 row["window_us"].get<double>(), table));
    out.push_back(std::move(row));
  }
  return out;
}

void write_trace(const TraceOpts& opts, const std::string& bench, nlohmann::json meta, nlohmann::json points,
                 const std::vector<std::string>& tables, bool json_on_stdout) {
  meta["bench"] = bench;
  meta["points"] = std::move(points);
  std::ofstream f(opts.path);
  GRT_CHECK(f.good(), "--trace {}: cannot open the file for writing", opts.path);
  f << meta.dump(1) << "\n";
  GRT_CHECK(f.good(), "--trace {}: writing the trace failed", opts.path);
  for (const std::string& t : tables) std::fprintf(json_on_stdout ? stderr : stdout, "%s", t.c_str());
  for (const auto& p : meta["points"])
    GRT_CHECK(!p.contains("timeline_error"), "--trace {}: the point with bs/tokens {} has no timeline: {}", opts.path,
              p.value("bs", p.value("tokens", 0)), p["timeline_error"].get<std::string>());
}

}  // namespace grt::bench
