// graphrt score: float32 logits of every prompt position, for comparing implementations.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/server_args.h"
#include "cli/tp_launch.h"

namespace grt {

void register_score(CLI::App& app) {
  struct Opts {
    ServerArgs args;
    std::vector<std::string> token_ids;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("score", "logits of every position of one or more prompts");
  opts->args.add_to(*cmd);
  cmd->add_option("--token-ids", opts->token_ids, "a prompt as comma-separated token ids (repeat for a batch)")
      ->required();
  cmd->add_flag("--json", opts->json,
                "print {\"vocab\": V, \"lengths\": [...], \"logits\": [[V floats] per position, prompts in order]}");
  cmd->callback([opts] {
    std::vector<std::vector<int32_t>> prompts;  // parsed before the model loads
    for (const auto& t : opts->token_ids) prompts.push_back(parse_token_ids(t));
    const TpMember tp = join_tp(opts->args);
    if (!tp.leader()) return follow_leader(opts->args, tp);
    auto runner = make_runner(opts->args, tp.comm, tp.device);
    Engine engine(*runner, opts->args.engine_options());
    auto logits = engine.score(prompts);
    const size_t vocab = static_cast<size_t>(runner->model().config().vocab_size);
    nlohmann::json rows = nlohmann::json::array();
    std::vector<size_t> lengths;
    for (const auto& l : logits) {
      lengths.push_back(l.size() / vocab);
      for (size_t r = 0; r < l.size() / vocab; ++r)
        rows.push_back(std::vector<float>(l.begin() + static_cast<int64_t>(r * vocab),
                                          l.begin() + static_cast<int64_t>((r + 1) * vocab)));
    }
    if (opts->json) {
      nlohmann::json j;
      j["vocab"] = vocab;
      j["lengths"] = lengths;
      j["logits"] = std::move(rows);
      std::printf("%s\n", j.dump().c_str());
    } else {
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        size_t best = 0;
        for (size_t v = 1; v < vocab; ++v)
          if (row[v].get<float>() > row[best].get<float>()) best = v;
        std::printf("position %zu: argmax %zu (logit %.4f)\n", i, best, row[best].get<float>());
      }
    }
  });
}

}  // namespace grt
