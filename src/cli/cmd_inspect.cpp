// graphrt inspect: loads the model, captures graphs exactly as a server would, and reports what
// was captured, how long it took and how much graph memory it holds.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/server_args.h"
#include "device/device.h"

namespace grt {

namespace {

nlohmann::json decode_json(const DecodeGraphs& g) {
  const DecodeGraphRunner& r = g.runner();
  nlohmann::json per_size = nlohmann::json::array();
  for (const DecodeGraphSize& s : r.sizes())
    per_size.push_back({{"bs", s.bs},
                        {"capture_seconds", s.capture_seconds},
                        {"graph_bytes", s.graph_bytes},
                        {"nodes", s.nodes},
                        {"segments", s.segments}});
  return {{"batch_sizes", r.batch_sizes()},
          {"capture_seconds", r.capture_seconds()},
          {"graph_bytes", g.graph_bytes()},
          {"input_bytes", g.input_bytes()},
          {"per_size", std::move(per_size)}};
}

size_t largest_capture_bytes(const DecodeGraphs& g) {
  size_t most = 0;
  for (const DecodeGraphSize& s : g.runner().sizes()) most = std::max(most, s.graph_bytes);
  return most;
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
    auto runner = make_runner(args);
    const Device d = runner->device();
    const DecodeGraphs* dg = runner->decode_graphs();
    nlohmann::json j;
    j["device"] = d.str();
    j["device_name"] = device_name(d);
    j["model"] = args.model;
    j["decode"] = dg ? decode_json(*dg) : nlohmann::json(nullptr);
    // Pool mode: one pool shared by every capture, so physical bytes are what the pool holds.
    j["graph_memory"] = {{"mode", "pool"},
                         {"physical_bytes", dg ? dg->graph_bytes() : 0},
                         {"largest_capture_bytes", dg ? largest_capture_bytes(*dg) : 0}};
    if (opts->json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("device: %s (%s)\nmodel: %s\n", d.str().c_str(), device_name(d).c_str(), args.model.c_str());
    if (!dg) {
      std::printf("decode graphs: off\n");
      return;
    }
    std::printf("%s\n", dg->summary().c_str());
    for (const DecodeGraphSize& s : dg->runner().sizes())
      std::printf("  bs %4d: %7.3f ms capture, %5zu nodes, %10zu graph bytes\n", s.bs, s.capture_seconds * 1e3,
                  s.nodes, s.graph_bytes);
  });
}

}  // namespace grt
