#include "runtime/capture_report.h"

#include <fmt/format.h>

namespace grt {

nlohmann::json capture_phases_json(const ShapeGraphRunner& runner) {
  const CapturePhases& p = runner.phases();
  const ShapeGraphOptions& o = runner.options();
  nlohmann::json per_shape = nlohmann::json::array();
  for (const CapturedShape& s : runner.stats()) {
    const CapturePhases& q = s.phases;
    per_shape.push_back({s.shape, q.record, q.instantiate, q.sync, q.prepare + q.warmup, q.memory});
  }
  return {{"wall_seconds", runner.capture_seconds()},
          {"instantiate_threads", o.lazy ? 0 : o.instantiate_threads},
          {"sync_each_shape", o.lazy || o.sync_each_shape},
          {"defer_instantiation", !o.lazy && o.instantiate_threads > 0 && o.defer_instantiation},
          {"prepare", p.prepare},
          {"warmup", p.warmup},
          {"memory", p.memory},
          {"record", p.record},
          {"instantiate", p.instantiate},
          {"instantiate_wait", p.instantiate_wait},
          {"sync", p.sync},
          {"other", p.other},
          {"per_shape_columns", {"shape", "record", "instantiate", "sync", "warmup", "memory"}},
          {"per_shape", per_shape}};
}

std::string capture_phases_text(const ShapeGraphRunner& runner) {
  const CapturePhases& p = runner.phases();
  const ShapeGraphOptions& o = runner.options();
  const std::string inst =
      !o.lazy && o.instantiate_threads > 0
          ? fmt::format("instantiate {:.3f} ({} threads, waited {:.3f})", p.instantiate, o.instantiate_threads,
                        p.instantiate_wait)
          : fmt::format("instantiate {:.3f}", p.instantiate);
  return fmt::format("record {:.3f}, {}, warm-up {:.3f}, prepare {:.3f}, memory {:.3f}, sync {:.3f}, other {:.3f} s",
                     p.record, inst, p.warmup, p.prepare, p.memory, p.sync, p.other);
}

}  // namespace grt
