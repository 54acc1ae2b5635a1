// Must NOT compile (tests/CMakeLists.txt, CompileFail.*): each case is a misuse the graph layer
// refuses at compile time, and the test checks the refusal's message.
#include "graph/breakable.h"

namespace {
struct HoldsATensor {  // a Tensor, but no for_each_tensor(): write-back would replace it
  grt::Tensor t;
};
}  // namespace

void misuse(grt::SegmentedCapture& capture) {
#if defined(GRAPHRT_FAIL_RESULT)
  grt::record_eager_call(capture, "step", [] { return HoldsATensor{}; });
#elif defined(GRAPHRT_FAIL_POINTER)
  static int rows = 0;
  grt::record_eager_call(capture, "step", [](const int* r) { return *r; }, &rows);
#else
  (void)capture;
#endif
}
