#include "core/kernel_layers.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace grt {
namespace {

bool same_kernel(const KernelSlot& a, const KernelSlot& b) { return a.name == b.name && a.grid == b.grid; }

double advance_sum(const std::vector<KernelSlot>& slots) {
  double s = 0;
  for (const KernelSlot& k : slots) s += k.advance_us;
  return s;
}

// The slots where a kernel that runs exactly `layers` times at even spacing starts, or empty.
std::vector<size_t> block_starts(const std::vector<KernelSlot>& slots, int layers) {
  const size_t n = slots.size();
  std::vector<bool> tried(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (tried[i]) continue;
    std::vector<size_t> at;
    for (size_t j = i; j < n; ++j)
      if (same_kernel(slots[i], slots[j])) at.push_back(j), tried[j] = true;
    if (at.size() != static_cast<size_t>(layers)) continue;
    const size_t period = layers > 1 ? at[1] - at[0] : n - at[0];
    bool even = at.back() + period <= n;
    for (size_t k = 1; k < at.size() && even; ++k) even = at[k] - at[k - 1] == period;
    if (even) return at;
  }
  return {};
}

std::string grid_text(const std::array<int, 3>& g) {
  return g[1] == 1 && g[2] == 1 ? fmt::format("{}", g[0]) : fmt::format("{}x{}x{}", g[0], g[1], g[2]);
}

std::string slot_list(const std::vector<KernelSlot>& slots) {
  std::string out;
  for (const KernelSlot& s : slots) out += fmt::format("{}{} {:.1f}", out.empty() ? "" : ", ", s.name, s.advance_us);
  return out;
}

}  // namespace

LayerView layer_view(const StepTimeline& t, int layers) {
  GRT_CHECK(layers >= 1, "layer view: layers must be >= 1, got {}", layers);
  GRT_CHECK(t.slots.size() >= static_cast<size_t>(layers), "layer view: {} layers cannot fit in a step of {} kernels",
            layers, t.slots.size());
  const std::vector<size_t> starts = block_starts(t.slots, layers);
  GRT_CHECK(!starts.empty(), "layer view: no kernel of the {}-kernel step runs exactly {} times at evenly spaced "
            "positions, so there is no repeating layer block", t.slots.size(), layers);
  const size_t period = layers > 1 ? starts[1] - starts[0] : t.slots.size() - starts[0];
  LayerView v;
  v.layers = layers;
  v.period = static_cast<int>(period);
  v.first_slot = static_cast<int>(starts[0]);
  v.anchor = t.slots[starts[0]].name;
  v.head.assign(t.slots.begin(), t.slots.begin() + static_cast<std::ptrdiff_t>(starts[0]));
  v.tail.assign(t.slots.begin() + static_cast<std::ptrdiff_t>(starts.back() + period), t.slots.end());
  v.head_us = advance_sum(v.head);
  v.tail_us = advance_sum(v.tail);
  std::vector<double> per_layer(starts.size(), 0.0);
  for (size_t p = 0; p < period; ++p) {
    LayerPosition lp;
    lp.pos = static_cast<int>(p);
    const KernelSlot& first = t.slots[starts[0] + p];
    lp.name = first.name;
    lp.grid = first.grid;
    std::vector<double> dur, gap, adv;
    for (size_t b = 0; b < starts.size(); ++b) {
      const KernelSlot& s = t.slots[starts[b] + p];
      lp.varies = lp.varies || !same_kernel(s, first);
      dur.push_back(s.dur_us);
      gap.push_back(s.gap_us);
      adv.push_back(s.advance_us);
      lp.advance_sum_us += s.advance_us;
      per_layer[b] += s.advance_us;
    }
    lp.dur_us = median_of(dur);
    lp.gap_us = median_of(gap);
    lp.advance_us = median_of(adv);
    v.layers_us += lp.advance_sum_us;
    v.positions.push_back(std::move(lp));
  }
  v.layer_us = median_of(per_layer);
  return v;
}

std::string layer_table_text(const StepTimeline& t, const LayerView& v) {
  std::string out = fmt::format("layer block: {} kernels from '{}', {} layers (slot {} on); medians over {} runs\n",
                                v.period, v.anchor, v.layers, v.first_slot, t.steps);
  out += "| pos | kernel | grid | dur us | gap us | advance us | sum us |\n|---:|---|---|---:|---:|---:|---:|\n";
  for (const LayerPosition& p : v.positions)
    out += fmt::format("| {} | {}{} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f} |\n", p.pos, p.name,
                       p.varies ? " (varies)" : "", grid_text(p.grid), p.dur_us, p.gap_us, p.advance_us,
                       p.advance_sum_us);
  out += fmt::format("head {:.1f} us ({}); layers {:.1f} us ({:.2f} a layer); tail {:.1f} us ({})\n", v.head_us,
                     slot_list(v.head), v.layers_us, v.layer_us, v.tail_us, slot_list(v.tail));
  out += fmt::format("step: {} kernels, span {:.1f} us, busy {:.1f} us (summed durations), first kernel {:.1f} us "
                     "after the step's begin mark\n", t.slots.size(), t.span_us, t.busy_us, t.lead_us);
  return out;
}

}  // namespace grt
