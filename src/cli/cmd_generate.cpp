// graphrt generate: greedy or sampled continuation of one or more prompts, run as one batch.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/server_args.h"

namespace grt {

void register_generate(CLI::App& app) {
  struct Opts {
    ServerArgs args;
    std::vector<std::string> token_ids;
    int max_new_tokens = 16;
    SamplingParams sampling;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("generate", "continue prompts given as token ids");
  opts->args.add_to(*cmd);
  cmd->add_option("--token-ids", opts->token_ids, "a prompt as comma-separated token ids (repeat for a batch)")
      ->required();
  cmd->add_option("--max-new-tokens", opts->max_new_tokens, "tokens to generate per prompt")->capture_default_str();
  cmd->add_option("--temperature", opts->sampling.temperature, ">= 0; 0: greedy")->capture_default_str();
  cmd->add_option("--top-k", opts->sampling.top_k, "-1 or 0: no limit, else >= 1")->capture_default_str();
  cmd->add_option("--top-p", opts->sampling.top_p, "in (0, 1]; 1: no limit")->capture_default_str();
  cmd->add_option("--sampling-seed", opts->sampling.seed,
                  "seed of the sampler, 0 .. 2^63-1 (per request: seed + index)")
      ->check(not_negative())
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print {\"output_ids\": [...]} (a list per prompt when several)");
  cmd->callback([opts] {
    // Bad sampling flags are refused before the model loads, named as flags.
    const SamplingFieldNames flags{"--temperature", "--top-k", "--top-p", "--sampling-seed"};
    opts->sampling.validate(flags);
    GRT_CHECK(opts->max_new_tokens >= 0, "--max-new-tokens {} is not allowed: must be >= 0", opts->max_new_tokens);
    GRT_CHECK(opts->sampling.seed <= SamplingParams::kMaxSeed - opts->token_ids.size(),
              "--sampling-seed {} is not allowed with {} prompts: request i uses seed + i, which must stay <= {}",
              opts->sampling.seed, opts->token_ids.size(), SamplingParams::kMaxSeed);
    std::vector<std::vector<int32_t>> prompts;  // parsed before the model loads
    for (const auto& t : opts->token_ids) prompts.push_back(parse_token_ids(t));
    auto runner = make_runner(opts->args);
    Engine engine(*runner, opts->args.engine_options());
    std::vector<GenerateRequest> reqs;
    for (size_t i = 0; i < opts->token_ids.size(); ++i) {
      GenerateRequest r;
      r.prompt = std::move(prompts[i]);
      r.max_new_tokens = opts->max_new_tokens;
      r.sampling = opts->sampling;
      r.sampling.seed = opts->sampling.seed + i;
      reqs.push_back(std::move(r));
    }
    auto outputs = engine.generate(reqs);
    if (opts->json) {
      nlohmann::json j;
      j["output_ids"] = outputs.size() == 1 ? nlohmann::json(outputs[0]) : nlohmann::json(outputs);
      std::printf("%s\n", j.dump().c_str());
    } else {
      for (size_t i = 0; i < outputs.size(); ++i) {
        std::printf("request %zu:", i);
        for (int32_t t : outputs[i]) std::printf(" %d", t);
        std::printf("\n");
      }
    }
  });
}

}  // namespace grt
