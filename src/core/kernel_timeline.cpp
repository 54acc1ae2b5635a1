#include "core/kernel_timeline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.h"

namespace grt {
namespace {

double us_between(uint64_t from, uint64_t to) {
  return (static_cast<double>(to) - static_cast<double>(from)) / 1000.0;
}

// Graph kernels: (graph id, node id); other kernels: (0, their order among the run's others).
using SlotKey = std::pair<uint64_t, uint64_t>;

std::vector<SlotKey> keys_of(const std::vector<const KernelRecord*>& run) {
  std::vector<SlotKey> keys;
  uint64_t eager = 0;
  for (const KernelRecord* r : run)
    keys.push_back(r->graph_node_id != 0 ? SlotKey{uint64_t{r->graph_id} + 1, r->graph_node_id} : SlotKey{0, eager++});
  return keys;
}

}  // namespace

StepTimeline step_timeline(const std::vector<KernelRecord>& records, const std::vector<StepWindow>& windows) {
  GRT_CHECK(!windows.empty(), "kernel timeline: no step windows (need at least one run of the step)");
  for (size_t w = 0; w < windows.size(); ++w) {
    GRT_CHECK(windows[w].end_ns > windows[w].begin_ns, "kernel timeline: step window {} ends at {} ns, not after its "
              "begin {} ns", w, windows[w].end_ns, windows[w].begin_ns);
    GRT_CHECK(w == 0 || windows[w].begin_ns >= windows[w - 1].end_ns,
              "kernel timeline: step window {} begins at {} ns, before window {} ends ({} ns): runs must not overlap",
              w, windows[w].begin_ns, w - 1, windows[w - 1].end_ns);
  }
  std::vector<std::vector<const KernelRecord*>> runs(windows.size());
  for (const KernelRecord& r : records) {
    GRT_CHECK(r.start_ns != 0 || r.end_ns != 0, "kernel timeline: kernel '{}' has no timestamps", r.name);
    GRT_CHECK(r.end_ns >= r.start_ns, "kernel timeline: kernel '{}' ends at {} ns, before its start {} ns", r.name,
              r.end_ns, r.start_ns);
    auto it = std::upper_bound(windows.begin(), windows.end(), r.start_ns,
                               [](uint64_t t, const StepWindow& w) { return t < w.begin_ns; });
    GRT_CHECK(it != windows.begin() && r.start_ns < std::prev(it)->end_ns,
              "kernel timeline: kernel '{}' starts at {} ns, outside every step window (first begins at {} ns, last "
              "ends at {} ns)", r.name, r.start_ns, windows.front().begin_ns, windows.back().end_ns);
    runs[static_cast<size_t>(std::prev(it) - windows.begin())].push_back(&r);
  }
  for (auto& run : runs)
    std::stable_sort(run.begin(), run.end(),
                     [](const KernelRecord* a, const KernelRecord* b) { return a->start_ns < b->start_ns; });
  GRT_CHECK(!runs[0].empty(), "kernel timeline: step run 0 has no kernels (was the step traced?)");

  // Positions from the first run; every other run must hold the same kernels.
  const std::vector<SlotKey> first_keys = keys_of(runs[0]);
  std::map<SlotKey, size_t> pos_of;
  for (size_t i = 0; i < first_keys.size(); ++i) pos_of[first_keys[i]] = i;
  const size_t n = runs[0].size();
  GRT_CHECK(pos_of.size() == n, "kernel timeline: run 0 holds a graph node twice ({} kernels, {} distinct)", n,
            pos_of.size());
  std::vector<std::vector<double>> dur(n), gap(n), adv(n);
  std::vector<double> span, busy, lead;
  for (size_t s = 0; s < runs.size(); ++s) {
    const auto& run = runs[s];
    GRT_CHECK(run.size() == n, "kernel timeline: step run {} has {} kernels, run 0 has {}: the runs differ", s,
              run.size(), n);
    std::vector<const KernelRecord*> by_pos(n, nullptr);
    const std::vector<SlotKey> keys = keys_of(run);
    for (size_t i = 0; i < n; ++i) {
      auto it = pos_of.find(keys[i]);
      GRT_CHECK(it != pos_of.end() && by_pos[it->second] == nullptr,
                "kernel timeline: step run {} runs kernel '{}' (graph {}, node {}) that run 0 does not", s,
                run[i]->name, run[i]->graph_id, run[i]->graph_node_id);
      const KernelRecord* want = runs[0][it->second];
      GRT_CHECK(run[i]->name == want->name && run[i]->grid == want->grid,
                "kernel timeline: step run {} has '{}' grid {} where run 0 has '{}' grid {}", s, run[i]->name,
                run[i]->grid, want->name, want->grid);
      by_pos[it->second] = run[i];
    }
    uint64_t first = UINT64_MAX, last = 0;
    double sum_ns = 0;  // whole nanoseconds, exact in a double: divided once, as the span is
    for (size_t p = 0; p < n; ++p) {
      const KernelRecord* r = by_pos[p];
      dur[p].push_back(us_between(r->start_ns, r->end_ns));
      gap[p].push_back(p == 0 ? 0.0 : us_between(by_pos[p - 1]->end_ns, r->start_ns));
      adv[p].push_back(p == 0 ? dur[p].back() : us_between(by_pos[p - 1]->end_ns, r->end_ns));
      first = std::min(first, r->start_ns);
      last = std::max(last, r->end_ns);
      sum_ns += static_cast<double>(r->end_ns) - static_cast<double>(r->start_ns);
    }
    span.push_back(us_between(first, last));
    // Summed in microseconds, kernels back to back with no gap could add up a rounding step past
    // the span (seen on an H100: 3.84 > 3.84).
    busy.push_back(sum_ns / 1000.0);
    lead.push_back(us_between(windows[s].begin_ns, first));
  }
  StepTimeline t;
  t.steps = static_cast<int>(runs.size());
  for (size_t p = 0; p < n; ++p) {
    const KernelRecord& r = *runs[0][p];
    KernelSlot slot;
    slot.pos = static_cast<int>(p);
    slot.name = r.name;
    slot.function = r.function;
    slot.grid = r.grid;
    slot.block = r.block;
    slot.stream = r.stream;
    slot.in_graph = r.graph_node_id != 0;
    slot.dur_us = median_of(dur[p]);
    slot.gap_us = median_of(gap[p]);
    slot.advance_us = median_of(adv[p]);
    t.slots.push_back(std::move(slot));
  }
  t.span_us = median_of(span);
  t.busy_us = median_of(busy);
  t.lead_us = median_of(lead);
  return t;
}

double median_of(std::vector<double> v) {
  GRT_CHECK(!v.empty(), "median of no values");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string short_kernel_name(const std::string& demangled) {
  std::string s = demangled;
  // Drops one balanced bracket group that ends the string: "(...)" or "<...>".
  auto drop_trailing = [&s](char open, char close) {
    if (s.empty() || s.back() != close) return;
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == close) ++depth;
      if (s[i] == open && --depth == 0) {
        s.erase(i);
        return;
      }
    }
  };
  drop_trailing('(', ')');
  drop_trailing('<', '>');
  const size_t colons = s.rfind("::");
  if (colons != std::string::npos) s = s.substr(colons + 2);
  const size_t space = s.rfind(' ');  // a return type ("void kern" when there is no namespace)
  if (space != std::string::npos) s = s.substr(space + 1);
  return s.empty() ? demangled : s;
}

}  // namespace grt
