#include "graph/breakable.h"

namespace grt {

void break_graph() {
  if (!breakable_capture_active()) return;
  SegmentedCapture::current()->eager_step("break_graph", [] {});
}

}  // namespace grt
