// graphrt generate: greedy or sampled continuation of one or more prompts (token ids, text, or a
// chat request file), all submitted at once to the continuous-batching scheduler.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/server_args.h"
#include "model/model_loader.h"
#include "cli/text_setup.h"
#include "cli/tp_launch.h"

namespace grt {

void register_generate(CLI::App& app) {
  struct Opts {
    ServerArgs args;
    std::vector<std::string> token_ids, prompts;
    std::string chat_file;
    std::vector<std::string> stop;
    int max_new_tokens = 16;
    SamplingParams sampling;
    bool ignore_eos = false;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("generate", "continue prompts (token ids, text, or a chat request)");
  opts->args.add_to(*cmd);
  cmd->add_option("--token-ids", opts->token_ids, "a prompt as comma-separated token ids (repeat for a batch)");
  cmd->add_option("--prompt", opts->prompts, "a prompt as text (repeat for a batch; needs a tokenizer)");
  cmd->add_option("--chat-file", opts->chat_file, "a chat request body (JSON with messages) rendered by the chat template");
  cmd->add_option("--max-new-tokens", opts->max_new_tokens, "tokens to generate per prompt")->capture_default_str();
  cmd->add_option("--temperature", opts->sampling.temperature, ">= 0; 0: greedy")->capture_default_str();
  cmd->add_option("--top-k", opts->sampling.top_k, "-1 or 0: no limit, else >= 1")->capture_default_str();
  cmd->add_option("--top-p", opts->sampling.top_p, "in (0, 1]; 1: no limit")->capture_default_str();
  cmd->add_option("--sampling-seed", opts->sampling.seed,
                  "seed of the sampler, 0 .. 2^63-1 (per request: seed + index)")
      ->check(not_negative())
      ->capture_default_str();
  cmd->add_option("--min-p", opts->sampling.min_p, "in [0, 1]; 0: off")->capture_default_str();
  cmd->add_option("--stop", opts->stop, "stop string (repeatable; not printed)");
  cmd->add_flag("--ignore-eos", opts->ignore_eos, "do not stop at the model's eos tokens (benchmarks)");
  cmd->add_flag("--json", opts->json, "print {\"output_ids\": [...]} (a list per prompt when several; text too)");
  cmd->callback([opts] {
    // Bad sampling flags are refused before the model loads, named as flags.
    const SamplingFieldNames flags{"--temperature", "--top-k", "--top-p", "--sampling-seed", "--min-p"};
    opts->sampling.validate(flags);
    GRT_CHECK(opts->max_new_tokens >= 0, "--max-new-tokens {} is not allowed: must be >= 0", opts->max_new_tokens);
    const ServerArgs& a = opts->args;
    // Flags, then the model folder (config.json, with the loader's "loading model" errors), before
    // the tokenizer and eos ids are read from that folder.
    a.check();
    (void)load_model_config(a.model);
    const TpMember tp = join_tp(a);
    if (!tp.leader()) return follow_leader(a, tp);
    TextSupport text = text_support_for(a.model);
    std::vector<std::vector<int32_t>> prompts;
    for (const auto& t : opts->token_ids) prompts.push_back(parse_token_ids(t));
    for (const auto& p : opts->prompts) {
      GRT_CHECK(text.encode, "--prompt needs a tokenizer, and {} has none (use --token-ids)", a.model);
      prompts.push_back(text.encode(p, true));
    }
    if (!opts->chat_file.empty()) {
      GRT_CHECK(text.render_chat && text.encode, "--chat-file needs a chat template and a tokenizer; {} has none",
                a.model);
      std::ifstream f(opts->chat_file);
      GRT_CHECK(f.good(), "cannot read --chat-file {}", opts->chat_file);
      nlohmann::json body;
      try {
        body = nlohmann::json::parse(f);
      } catch (const std::exception& e) {
        GRT_FAIL("--chat-file {} is not valid JSON: {}", opts->chat_file, e.what());
      }
      prompts.push_back(text.encode(text.render_chat(body), false));
    }
    GRT_CHECK(!prompts.empty(), "give a prompt: --token-ids, --prompt or --chat-file");
    GRT_CHECK(opts->sampling.seed <= SamplingParams::kMaxSeed - prompts.size(),
              "--sampling-seed {} is not allowed with {} prompts: request i uses seed + i, which must stay <= {}",
              opts->sampling.seed, prompts.size(), SamplingParams::kMaxSeed);
    const bool with_text = static_cast<bool>(text.stream);
    SchedulerOptions so = a.scheduler_options();
    so.eos_token_ids = eos_token_ids_of(a.model);
    so.text = text.stream;
    Scheduler sched([args = a, tp] { return make_runner(args, tp.comm, tp.device); }, so);
    sched.wait_ready();
    std::vector<RequestParams> batch;
    for (size_t i = 0; i < prompts.size(); ++i) {
      RequestParams p;
      p.prompt = prompts[i];
      p.max_tokens = opts->max_new_tokens;
      p.sampling = opts->sampling;
      p.sampling.seed = opts->sampling.seed + i;
      p.stop = opts->stop;
      p.ignore_eos = opts->ignore_eos;
      batch.push_back(std::move(p));
    }
    // All at once: the scheduler then batches them the same way every run, so greedy outputs
    // repeat (submitted one by one, how many the first step took depended on thread timing).
    std::vector<std::shared_ptr<RequestHandle>> handles;
    try {
      handles = sched.submit_all(std::move(batch));
    } catch (const RequestRejected& e) {
      if (e.index() >= 0) GRT_FAIL("request {}: {}", e.index(), e.what());
      GRT_FAIL("{}", e.what());
    }
    std::vector<std::vector<int32_t>> ids(prompts.size());
    std::vector<std::string> texts(prompts.size());
    for (size_t i = 0; i < handles.size(); ++i) {
      while (true) {
        auto ev = handles[i]->next(std::chrono::milliseconds(1000));
        if (!ev) continue;
        GRT_CHECK(!(ev->finish && *ev->finish == FinishReason::kAbort), "request {} failed: {}", i, ev->error);
        ids[i].insert(ids[i].end(), ev->ids.begin(), ev->ids.end());
        texts[i] += ev->text;
        if (ev->finish) break;
      }
    }
    if (opts->json) {
      nlohmann::json j;
      j["output_ids"] = ids.size() == 1 ? nlohmann::json(ids[0]) : nlohmann::json(ids);
      if (with_text) j["text"] = texts.size() == 1 ? nlohmann::json(texts[0]) : nlohmann::json(texts);
      std::printf("%s\n", j.dump().c_str());
    } else if (with_text) {
      for (size_t i = 0; i < texts.size(); ++i) std::printf("%s\n", texts[i].c_str());
    } else {
      for (size_t i = 0; i < ids.size(); ++i) {
        std::printf("request %zu:", i);
        for (int32_t t : ids[i]) std::printf(" %d", t);
        std::printf("\n");
      }
    }
  });
}

}  // namespace grt
