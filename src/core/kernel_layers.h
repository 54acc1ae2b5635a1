// The per-layer view of a step timeline (core/kernel_timeline.h): the decoder layers' repeating
// block of kernels found as scripts/ncu_layer_table.py finds it, each position of the block with
// its median over the layers, and the kernels before the first layer (head: embedding, the first
// norm) and after the last (tail: final norm, lm_head, sampling) apart; plus a short text table.
#pragma once
#include <string>
#include <vector>

#include "core/kernel_timeline.h"

namespace grt {

// One position of the layer block, over the layers.
struct LayerPosition {
  int pos = 0;  // in the block
  std::string name;
  std::array<int, 3> grid{1, 1, 1};
  bool varies = false;  // some layer runs another kernel (name or grid) at this position
  double dur_us = 0;      // median over the layers of the slots' median durations
  double gap_us = 0;      // likewise, gaps
  double advance_us = 0;  // likewise, advances
  double advance_sum_us = 0;  // summed over the layers
};

struct LayerView {
  int layers = 0;
  int period = 0;      // kernels a layer
  int first_slot = 0;  // step slot where the first layer's block starts
  std::string anchor;  // the kernel that starts each block
  std::vector<LayerPosition> positions;
  std::vector<KernelSlot> head;  // slots before the first block
  std::vector<KernelSlot> tail;  // slots after the last block
  double head_us = 0;    // the head's summed advances
  double layers_us = 0;  // the blocks' summed advances
  double tail_us = 0;    // the tail's summed advances
  double layer_us = 0;   // median over the layers of a block's summed advances
};

// The block starts at each slot of the first kernel (name and grid) that runs exactly `layers`
// times at evenly spaced slots, the last block fitting in the step. Errors: layers < 1, a step
// with fewer than `layers` slots, no kernel that repeats so.
LayerView layer_view(const StepTimeline& t, int layers);

// A text table of the layer block (pos | kernel | grid | dur | gap | advance | sum) with the head,
// the tail and the step totals under it, for the terminal and results READMEs.
std::string layer_table_text(const StepTimeline& t, const LayerView& v);

}  // namespace grt
