// graphrt inspect: loads the model, captures graphs exactly as a server would, and reports what
// was captured, how long it took and how much graph memory it holds.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/server_args.h"
#include "cli/tp_launch.h"
#include "device/device.h"
#include "graph/split_ops.h"
#include "runtime/capture_report.h"

namespace grt {

namespace {

nlohmann::json per_shape_json(const ShapeGraphRunner& r, const char* key) {
  nlohmann::json per_size = nlohmann::json::array();
  for (const CapturedShape& s : r.stats())
    per_size.push_back({{key, s.shape},
                        {"capture_seconds", s.capture_seconds},
                        {"warmup_seconds", s.warmup_seconds},
                        {"record_seconds", s.phases.record},
                        {"instantiate_seconds", s.phases.instantiate},
                        {"sync_seconds", s.phases.sync},
                        {"graph_bytes", s.graph_bytes},
                        {"nodes", s.nodes},
                        {"segments", s.segments},
                        {"lazy", s.lazy},
                        {"captured_at_seconds", s.captured_at},
                        {"verified", s.verified},
                        {"max_abs_diff", s.max_abs_diff < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.max_abs_diff)},
                        {"retired", s.retired.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.retired)}});
  return per_size;
}

nlohmann::json piecewise_json(const ForwardGraphs& g) {
  const ShapeGraphRunner& r = g.runner();
  return {{"token_counts", r.shapes()},
          {"pieces", r.stats().empty() ? 0 : r.stats().front().segments},
          {"split_ops", g.schema().policy(false).split_ops ? split_op_names() : std::vector<std::string>{}},
          {"capture_seconds", r.capture_seconds()},
          {"capture_phases", capture_phases_json(r)},
          {"graph_bytes", g.graph_bytes()},
          {"input_bytes", g.input_bytes()},
          {"lazy", r.options().lazy},
          {"per_size", per_shape_json(r, "tokens")}};
}

nlohmann::json decode_json(const ForwardGraphs& g) {
  const ShapeGraphRunner& r = g.runner();
  return {{"batch_sizes", r.shapes()},
          {"capture_seconds", r.capture_seconds()},
          {"capture_phases", capture_phases_json(r)},
          {"graph_bytes", g.graph_bytes()},
          {"input_bytes", g.input_bytes()},
          {"lazy", r.options().lazy},
          {"per_size", per_shape_json(r, "bs")}};
}

// ", verified (max diff 0)" / ", retired: why" for the text report.
std::string shape_note(const CapturedShape& s) {
  std::string note;
  if (s.max_abs_diff >= 0) note += fmt::format(", {} (max diff {:.3g})", s.verified ? "verified" : "NOT verified", s.max_abs_diff);
  if (!s.retired.empty()) note += ", retired: " + s.retired;
  return note;
}

size_t largest_capture_bytes(const ShapeGraphRunner* r, size_t most) {
  if (r)
    for (const CapturedShape& s : r->stats()) most = std::max(most, s.graph_bytes);
  return most;
}

nlohmann::json graph_memory_json(const GraphMemory* m, const ForwardGraphs* dg, const ForwardGraphs* pg,
                                 const ForwardGraphs* fg) {
  if (!m) return {{"mode", nullptr}, {"physical_bytes", 0}, {"largest_capture_bytes", 0}};
  nlohmann::json j = {{"mode", graph_memory_mode_name(m->mode())}, {"physical_bytes", m->physical_bytes()}};
  if (const VmmSpaces* v = m->vmm()) {
    const VmmStats s = v->stats();
    j["reserved_virtual_bytes"] = s.reserved_virtual_bytes;
    j["spaces"] = s.spaces;
    j["mapped_bytes"] = s.mapped_bytes;
    j["chunks"] = s.chunks;
    j["mappings"] = s.mappings;
    j["consolidations"] = s.consolidations;
    j["budget_bytes"] = s.budget_bytes;
    j["granularity"] = s.granularity;
    j["largest_capture_bytes"] = s.largest_space_bytes;
  } else {
    // A shared pool grows with the capture that needs the most (they run largest first).
    size_t largest = largest_capture_bytes(dg ? &dg->runner() : nullptr, 0);
    largest = largest_capture_bytes(pg ? &pg->runner() : nullptr, largest);
    j["largest_capture_bytes"] = largest_capture_bytes(fg ? &fg->runner() : nullptr, largest);
  }
  return j;
}

}  // namespace

void register_inspect(CLI::App& app) {
  struct Opts {
    ServerArgs args;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("inspect", "capture graphs as a server would and report them");
  opts->args.add_to(*cmd);
  cmd->add_flag("--json", opts->json, "print a JSON report");
  cmd->callback([opts] {
    ServerArgs args = opts->args;
    const TpMember tp = join_tp(args);
    if (!tp.leader()) return follow_leader(args, tp);  // rank 0 reports the schedule every rank agreed on
    auto runner = make_runner(args, tp.comm, tp.device);
    const Device d = runner->device();
    const ForwardGraphs* dg = runner->decode_graphs();
    nlohmann::json j;
    j["device"] = d.str();
    j["device_name"] = device_name(d);
    j["model"] = args.model;
    j["tp_size"] = runner->tp_size();
    const ForwardGraphs* pg = runner->piecewise_graphs();
    j["decode"] = dg ? decode_json(*dg) : nlohmann::json(nullptr);
    j["piecewise"] = pg ? piecewise_json(*pg) : nlohmann::json(nullptr);
    const ForwardGraphs* fg = runner->full_extend_graphs();
    j["full_extend"] = fg ? piecewise_json(*fg) : nlohmann::json(nullptr);
    // Pool mode: one pool shared by every capture, so physical bytes are what the pool holds.
    j["graph_memory"] = graph_memory_json(runner->graph_memory(), dg, pg, fg);
    if (opts->json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("device: %s (%s)\nmodel: %s\n", d.str().c_str(), device_name(d).c_str(), args.model.c_str());
    std::printf("%s\n", dg ? dg->summary().c_str() : "decode graphs: off");
    if (dg)
      for (const CapturedShape& s : dg->runner().stats())
        std::printf("  bs %4d: %7.3f ms capture at %.3f s%s, %5zu nodes, %10zu graph bytes%s\n", s.shape,
                    s.capture_seconds * 1e3, s.captured_at, s.lazy ? " (lazy)" : "", s.nodes, s.graph_bytes,
                    shape_note(s).c_str());
    for (const auto& [g, name] : {std::pair{pg, "piecewise"}, std::pair{fg, "full extend"}}) {
      if (!g) {
        std::printf("%s graphs: off\n", name);
        continue;
      }
      std::printf("%s\n", g->summary().c_str());
      for (const CapturedShape& s : g->runner().stats())
        std::printf("  tokens %5d: %7.3f ms capture at %.3f s%s, %zu pieces, %5zu nodes, %10zu graph bytes%s\n",
                    s.shape, s.capture_seconds * 1e3, s.captured_at, s.lazy ? " (lazy)" : "", s.segments, s.nodes,
                    s.graph_bytes, shape_note(s).c_str());
    }
  });
}

}  // namespace grt
