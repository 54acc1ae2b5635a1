// `graphrt serve` end to end over 127.0.0.1: OpenAI completions (streamed and not), SGLang's
// /generate, greedy tokens equal to `graphrt generate`, 64 concurrent streams, a client that
// disconnects, retraction, bad bodies, graceful shutdown, and a soak.
#ifdef GRAPHRT_WITH_HTTP
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <fstream>
#include <thread>

#include "cli_runner.h"
#include "server_process.h"
#include "server/http_server.h"
#include "server/sse_reader.h"

namespace grt {
namespace {

using json = nlohmann::json;
using testing::ServerProcess;
using testing::run_graphrt;

constexpr const char* kServeArgs = "--model-path builtin:tiny --device cpu --context-length 512 --max-running-requests 32";

// "1,2,3": ids for --token-ids.
std::string csv(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out;
}

std::vector<int> prompt_ids(int len, int salt) {
  std::vector<int> v;
  for (int i = 0; i < len; ++i) v.push_back((i * 31 + salt * 17 + 3) % 512);
  return v;
}

json post(ServerProcess& s, const std::string& path, const json& body, int* status = nullptr) {
  auto c = s.client();
  auto r = c.Post(path, body.dump(), "application/json");
  if (!r) {
    ADD_FAILURE() << "POST " << path << " failed: " << httplib::to_string(r.error());
    return {};
  }
  if (status) *status = r->status;
  else EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body, nullptr, false);
}

// Greedy output ids of one prompt from /generate.
std::vector<int> generate_ids(ServerProcess& s, const std::vector<int>& prompt, int max_new) {
  json r = post(s, "/generate",
                {{"input_ids", prompt}, {"sampling_params", {{"max_new_tokens", max_new}, {"temperature", 0}, {"ignore_eos", true}}}});
  return r.value("output_ids", std::vector<int>{});
}

struct Streamed {
  std::vector<int> ids;
  std::vector<json> chunks;
  bool done = false;
  int status = 0;
};

// A streamed completion; `stop_after` > 0 closes the connection after that many chunks.
Streamed stream_completion(ServerProcess& s, const std::vector<int>& prompt, int max_tokens, int stop_after = 0) {
  Streamed out;
  auto c = s.client();
  json body = {{"prompt", prompt},      {"max_tokens", max_tokens},   {"temperature", 0}, {"ignore_eos", true},
               {"stream", true},        {"return_token_ids", true},   {"stream_options", {{"include_usage", true}}}};
  SseReader sse;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
                    for (const std::string& ev : sse.feed({d, n})) {
                      const auto payload = SseReader::data_of(ev);
                      EXPECT_TRUE(payload.has_value()) << ev;
                      if (!payload) continue;
                      if (*payload == "[DONE]") {
                        out.done = true;
                        continue;
                      }
                      json j = json::parse(*payload);
                      if (!j["choices"].empty())
                        for (int id : j["choices"][0]["token_ids"]) out.ids.push_back(id);
                      out.chunks.push_back(j);
                    }
                    return stop_after <= 0 || static_cast<int>(out.chunks.size()) < stop_after;
                  };
  auto r = c.send(req);
  if (r) out.status = r->status;
  return out;
}

double metric(ServerProcess& s, const std::string& name) {
  auto c = s.client();
  auto r = c.Get("/metrics");
  if (!r) return -1;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

// The scheduler publishes its gauges (KV in use, slots, running) after it sends a step's events,
// so a client that has just read a request's last token can still see that request's KV for one
// step: poll the gauge (up to 10 s) until it reads `want`, and return what it read last.
double settled_metric(ServerProcess& s, const std::string& name, double want) {
  double v = metric(s, name);
  for (int i = 0; i < 200 && v != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    v = metric(s, name);
  }
  return v;
}

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(kServeArgs); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->ready()) << server_->log(); }
  static ServerProcess* server_;
};
ServerProcess* Serve::server_ = nullptr;

TEST_F(Serve, GreedyCompletionEqualsGenerate) {
  std::vector<int> p = prompt_ids(12, 1);
  auto gen = testing::run_graphrt("generate --model builtin:tiny --device cpu --context-length 512 --token-ids " +
                                  csv(p) + " --max-new-tokens 10 --ignore-eos --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.all;
  std::vector<int> want = json::parse(gen.out)["output_ids"];
  json r = post(*server_, "/v1/completions",
                {{"prompt", p}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}, {"return_token_ids", true}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["token_ids"].get<std::vector<int>>(), want);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(r["usage"]["completion_tokens"], 10);
  EXPECT_EQ(generate_ids(*server_, p, 10), want);
}

// A 100-token prompt is one request's extend above the decode rows (32 here): a full extend graph
// prefills it (the counter moves), and the tokens equal generate's with every extend eager.
TEST_F(Serve, LongPromptPrefillsOnAFullExtendGraph) {
  std::vector<int> p = prompt_ids(100, 3);
  auto gen = testing::run_graphrt("generate --model builtin:tiny --device cpu --context-length 512 --token-ids " +
                                  csv(p) + " --max-new-tokens 5 --ignore-eos --json --disable-piecewise-cuda-graph");
  ASSERT_EQ(gen.exit_code, 0) << gen.all;
  const std::vector<int> want = json::parse(gen.out)["output_ids"];
  const double before = metric(*server_, "graphrt_extend_steps_on_full_graphs_total");
  ASSERT_GE(before, 0);
  json r = post(*server_, "/v1/completions",
                {{"prompt", p}, {"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true}, {"return_token_ids", true}});
  EXPECT_EQ(r["choices"][0]["token_ids"].get<std::vector<int>>(), want);
  EXPECT_GE(metric(*server_, "graphrt_extend_steps_on_full_graphs_total"), before + 1);
}

TEST_F(Serve, StreamedCompletionEndsWithUsageAndDone) {
  std::vector<int> p = prompt_ids(9, 2);
  Streamed s = stream_completion(*server_, p, 7);
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.ids, generate_ids(*server_, p, 7));
  ASSERT_GE(s.chunks.size(), 2u);
  const json& last = s.chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 7);
  EXPECT_EQ(s.chunks[s.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
}

TEST_F(Serve, ModelsHealthAndMetrics) {
  auto c = server_->client();
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "builtin:tiny");
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_GE(metric(*server_, "graphrt_kv_total_tokens"), 1);
  EXPECT_GE(metric(*server_, "graphrt_time_to_first_token_seconds_count"), 0);
  EXPECT_GE(metric(*server_, "graphrt_extend_steps_on_decode_graphs_total"), 0);  // present
  EXPECT_GE(metric(*server_, "graphrt_extend_steps_on_full_graphs_total"), 0);    // present
}

TEST_F(Serve, ChatStreamedAndNot) {
  json body = {{"messages", {{{"role", "user"}, {"content", "hi there"}}}}, {"max_tokens", 6}, {"temperature", 0},
               {"ignore_eos", true}, {"return_token_ids", true}};
  json r = post(*server_, "/v1/chat/completions", body);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(r["usage"]["completion_tokens"], 6);
  // Streamed: role first, content deltas, finish reason, usage, [DONE]; same text.
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto c = server_->client();
  auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::string text;
  std::istringstream in(res->body);
  std::string line, last;
  bool role = false;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    last = line.substr(6);
    if (last == "[DONE]") break;
    json j = json::parse(last);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    if (j["choices"].empty()) continue;
    const json& d = j["choices"][0]["delta"];
    if (d.contains("role")) role = true;
    text += d.value("content", "");
  }
  EXPECT_EQ(last, "[DONE]");
  EXPECT_TRUE(role);
  EXPECT_EQ(text, r["choices"][0]["message"]["content"].get<std::string>());
}

TEST_F(Serve, GreedyTextEqualsGeneratePrompt) {
  auto gen = testing::run_graphrt(
      "generate --model builtin:tiny --device cpu --context-length 512 --prompt 'Hello world' --max-new-tokens 8 "
      "--ignore-eos --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.all;
  json want = json::parse(gen.out);
  json r = post(*server_, "/v1/completions",
                {{"prompt", "Hello world"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
                 {"return_token_ids", true}});
  EXPECT_EQ(r["choices"][0]["token_ids"], want["output_ids"]);
  EXPECT_EQ(r["choices"][0]["text"], want["text"]);
}

TEST_F(Serve, SixtyFourConcurrentStreamsGetTheirAloneTokens) {
  const int n = 64;
  std::vector<std::vector<int>> prompts;
  std::vector<int> lens;
  for (int i = 0; i < n; ++i) {
    prompts.push_back(prompt_ids(2 + (i * 13) % 60, 100 + i));
    lens.push_back(1 + (i * 7) % 24);
  }
  std::vector<std::vector<int>> alone;
  for (int i = 0; i < n; ++i) alone.push_back(generate_ids(*server_, prompts[static_cast<size_t>(i)], lens[static_cast<size_t>(i)]));
  std::vector<Streamed> got(n);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] { got[static_cast<size_t>(i)] = stream_completion(*server_, prompts[static_cast<size_t>(i)], lens[static_cast<size_t>(i)]); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(got[static_cast<size_t>(i)].done) << "stream " << i;
    EXPECT_EQ(got[static_cast<size_t>(i)].ids, alone[static_cast<size_t>(i)]) << "stream " << i;
  }
}

TEST_F(Serve, ClientThatDisconnectsFreesItsKv) {
  const double aborted = metric(*server_, "graphrt_requests_total{finish_reason=\"abort\"}");
  Streamed s = stream_completion(*server_, prompt_ids(20, 5), 400, /*stop_after=*/3);
  EXPECT_FALSE(s.done);
  bool freed = false;
  for (int i = 0; i < 200 && !freed; ++i) {
    freed = metric(*server_, "graphrt_kv_used_tokens") == 0 &&
            metric(*server_, "graphrt_requests_total{finish_reason=\"abort\"}") > aborted;
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(freed) << "KV in use: " << metric(*server_, "graphrt_kv_used_tokens");
  EXPECT_EQ(settled_metric(*server_, "graphrt_num_running_requests", 0), 0);
}

TEST_F(Serve, BadBodiesGetTheirStatusAndTheServerLives) {
  auto c = server_->client();
  auto raw = c.Post("/v1/completions", "{not json", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_TRUE(json::parse(raw->body)["error"].contains("message"));
  struct Case {
    json body;
    const char* param;
  };
  const std::vector<Case> cases = {
      {{{"prompt", {1, 2}}, {"temperature", -1}}, "temperature"},
      {{{"prompt", {1, 2}}, {"top_p", 0}}, "top_p"},
      {{{"prompt", {1, 2}}, {"max_tokens", "ten"}}, "max_tokens"},
      {{{"prompt", {1, 2}}, {"max_tokens", 600}}, "max_tokens"},  // beyond the 512 context
      {{{"prompt", {1, 99999}}}, "prompt"},
      {{{"prompt", json::array()}}, "prompt"},
      {{{"max_tokens", 3}}, "prompt"},
      {{{"prompt", {1, 2}}, {"n", 0}}, "n"},
      {{{"prompt", {1, 2}}, {"stop", 5}}, "stop"},
      {{{"prompt", {1, 2}}, {"logprobs", 50}}, "logprobs"},
      {{{"prompt", {1, 2}}, {"stop", {""}}}, "stop"},
      {{{"prompt", {1, 2}}, {"repetition_penalty", 0}}, "repetition_penalty"},
  };
  for (const Case& k : cases) {
    int status = 0;
    json r = post(*server_, "/v1/completions", k.body, &status);
    EXPECT_EQ(status, 400) << k.body.dump();
    EXPECT_EQ(r["error"]["param"], k.param) << k.body.dump();
    EXPECT_EQ(r["error"]["code"], 400);
  }
  int status = 0;
  post(*server_, "/generate", {{"input_ids", {1}}, {"sampling_params", {{"min_p", 3}}}}, &status);
  EXPECT_EQ(status, 400);
  auto nf = c.Get("/v1/nothing");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(generate_ids(*server_, {1, 2, 3}, 2).size(), 2u);
}

TEST_F(Serve, LogprobsAndSampling) {
  json r = post(*server_, "/v1/completions",
                {{"prompt", prompt_ids(6, 9)}, {"max_tokens", 5}, {"temperature", 0.7}, {"seed", 3},
                 {"top_k", 20}, {"presence_penalty", 0.5}, {"logprobs", 2}, {"return_token_ids", true}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  for (double x : lp["token_logprobs"]) EXPECT_LE(x, 0.0);
  json again = post(*server_, "/v1/completions",
                    {{"prompt", prompt_ids(6, 9)}, {"max_tokens", 5}, {"temperature", 0.7}, {"seed", 3},
                     {"top_k", 20}, {"presence_penalty", 0.5}, {"return_token_ids", true}});
  EXPECT_EQ(r["choices"][0]["token_ids"], again["choices"][0]["token_ids"]);
}

// bench serving's lengths: uniform in [min, len] per side (sglang's --random-range-ratio cannot
// give inputs 32..1024 and outputs 32..512 at once), or [ratio * len, len]; all sent, all served.
TEST_F(Serve, BenchServingLengthRanges) {
  const std::string common = fmt::format("bench serving --port {} --num-prompts 12 --max-concurrency 4 --json ",
                                         server_->port());
  auto r = run_graphrt(common + "--random-input-len 40 --random-input-min-len 30 --random-output-len 6 "
                                "--random-output-min-len 3 --random-vocab-size 512");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  EXPECT_EQ(j["completed"], 12);
  const json& l = j["requested_lengths"];
  EXPECT_GE(l["input_min"].get<int>(), 30);
  EXPECT_LE(l["input_max"].get<int>(), 40);
  EXPECT_LT(l["input_min"].get<int>(), l["input_max"].get<int>());  // 12 draws from 11 values
  EXPECT_GE(l["output_min"].get<int>(), 3);
  EXPECT_LE(l["output_max"].get<int>(), 6);
  EXPECT_GE(j["total_output_tokens"].get<int>(), 12 * 3);
  EXPECT_LE(j["total_output_tokens"].get<int>(), 12 * 6);
  // Ratio 1: every length is the longest.
  r = run_graphrt(common + "--random-input-len 20 --random-output-len 4 --random-range-ratio 1");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  j = json::parse(r.out);
  EXPECT_EQ(j["total_input_tokens"], 12 * 20);
  EXPECT_EQ(j["total_output_tokens"], 12 * 4);
  r = run_graphrt(common + "--random-output-len 4 --random-output-min-len 5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.all.find("--random-output-min-len 5"), std::string::npos) << r.all;
  // Some steps were planned while the device ran the one before.
  EXPECT_GT(metric(*server_, "graphrt_step_host_overlapped_seconds_count"), 0);
  EXPECT_GT(metric(*server_, "graphrt_step_host_seconds_count"), 0);
  // Where the device time went: 12 x 30..40 prompt tokens were forwarded by extend steps.
  EXPECT_GE(metric(*server_, "graphrt_step_tokens_total{mode=\"extend\"}"), 12 * 30);
  EXPECT_GT(metric(*server_, "graphrt_step_seconds_total{mode=\"decode\"}"), 0);
  EXPECT_GT(metric(*server_, "graphrt_step_context_tokens_total{mode=\"decode\"}"),
            metric(*server_, "graphrt_step_tokens_total{mode=\"decode\"}"));
  EXPECT_GE(metric(*server_, "graphrt_graph_padding_total{graph=\"piecewise\"}"), 0);  // present
  EXPECT_EQ(metric(*server_, "graphrt_decode_step_rows_sum"),
            metric(*server_, "graphrt_step_tokens_total{mode=\"decode\"}"));
  EXPECT_GT(metric(*server_, "graphrt_extend_step_tokens_count"), 0);
}

// n > 1: one choice per scheduler request, choice i sampled with seed + i; usage summed.
TEST_F(Serve, SeveralChoicesStreamedAndNot) {
  auto body = [](int n, int seed, bool stream) {
    return json{{"prompt", prompt_ids(7, 4)}, {"max_tokens", 6}, {"temperature", 0.9}, {"seed", seed},
                {"ignore_eos", true}, {"n", n}, {"return_token_ids", true}, {"stream", stream},
                {"stream_options", {{"include_usage", true}}}};
  };
  json r = post(*server_, "/v1/completions", body(3, 11, false));
  ASSERT_EQ(r["choices"].size(), 3u) << r.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    json alone = post(*server_, "/v1/completions", body(1, 11 + i, false));
    EXPECT_EQ(r["choices"][i]["token_ids"], alone["choices"][0]["token_ids"]) << "choice " << i;
  }
  EXPECT_EQ(r["usage"]["completion_tokens"], 18);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 7);

  // Streamed: chunks of both choices, one usage chunk and one [DONE] at the end.
  auto c = server_->client();
  std::map<int, std::vector<int>> ids;
  int dones = 0, usages = 0;
  SseReader sse;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = body(2, 11, true).dump();
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    for (const std::string& ev : sse.feed({d, n})) {
      const auto payload = SseReader::data_of(ev);
      if (!payload) continue;
      if (*payload == "[DONE]") {
        ++dones;
        continue;
      }
      json j = json::parse(*payload);
      EXPECT_EQ(dones, 0) << "a chunk after [DONE]";
      if (j.contains("usage") && j["usage"].is_object()) {
        ++usages;
        EXPECT_EQ(j["usage"]["completion_tokens"], 12);
      }
      for (const json& ch : j["choices"])
        for (int id : ch["token_ids"]) ids[ch["index"].get<int>()].push_back(id);
    }
    return true;
  };
  auto res = c.send(req);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(dones, 1);
  EXPECT_EQ(usages, 1);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(json(ids[0]), r["choices"][0]["token_ids"]);
  EXPECT_EQ(json(ids[1]), r["choices"][1]["token_ids"]);

  int status = 0;
  json bad = post(*server_, "/v1/completions", body(17, 1, false), &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(bad["error"]["param"], "n");
}

TEST(GenerateText, ChatFileStopStringsAndJsonIds) {
  const std::string f = ::testing::TempDir() + "graphrt_chat_request.json";
  {
    std::ofstream out(f);
    out << R"({"messages": [{"role": "user", "content": "hello"}]})";
  }
  auto r = testing::run_graphrt("generate --model builtin:tiny --device cpu --chat-file " + f +
                                " --max-new-tokens 6 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  EXPECT_EQ(j["output_ids"].size(), 6u);
  EXPECT_TRUE(j["text"].is_string());
  // A stop string cut from the greedy text: output ends before it and does not print it.
  const std::string text = j["text"];
  const std::string stop = text.size() >= 4 ? text.substr(2, 2) : "";
  if (!stop.empty() && stop.find('\'') == std::string::npos) {
    auto s = testing::run_graphrt("generate --model builtin:tiny --device cpu --chat-file " + f +
                                  " --max-new-tokens 6 --ignore-eos --json --stop '" + stop + "'");
    ASSERT_EQ(s.exit_code, 0) << s.all;
    const std::string cut = json::parse(s.out)["text"];
    EXPECT_EQ(cut, text.substr(0, text.find(stop)));
  }
  std::remove(f.c_str());
}

TEST(ServeRetraction, SmallKvCacheGivesTheSameTokens) {
  ServerProcess s(std::string(kServeArgs) + " --max-total-tokens 160");
  ASSERT_TRUE(s.ready()) << s.log();
  const int n = 8;
  std::vector<std::vector<int>> alone;
  for (int i = 0; i < n; ++i) alone.push_back(generate_ids(s, prompt_ids(16, 200 + i), 48));
  std::vector<Streamed> got(n);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] { got[static_cast<size_t>(i)] = stream_completion(s, prompt_ids(16, 200 + i), 48); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < n; ++i) EXPECT_EQ(got[static_cast<size_t>(i)].ids, alone[static_cast<size_t>(i)]) << i;
  EXPECT_GT(metric(s, "graphrt_retractions_total"), 0);
  EXPECT_EQ(settled_metric(s, "graphrt_kv_used_tokens", 0), 0);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(ServeQueue, FullQueueIs503AndShutdownFinishesInFlight) {
  ServerProcess s(std::string(kServeArgs) + " --max-queued-requests 1 --graceful-shutdown-timeout 30");
  ASSERT_TRUE(s.ready()) << s.log();
  Streamed first;
  std::thread t([&] { first = stream_completion(s, prompt_ids(8, 1), 400); });
  for (int i = 0; i < 500 && metric(s, "graphrt_generation_tokens_total") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int status = 0;
  for (int i = 0; i < 100 && status != 503; ++i) {
    post(s, "/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 2}}, &status);
    if (status != 503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 503);
  // SIGTERM while the stream runs: it finishes within the grace period, then exit 0.
  EXPECT_EQ(s.stop(), 0) << s.log();
  t.join();
  EXPECT_TRUE(first.done);
  EXPECT_EQ(first.ids.size(), 400u);
}

// A thread graphrt did not start (LD_PRELOAD'ed, as compute-sanitizer's are) blocks no signal, so
// the kernel may hand it the process's SIGTERM: the server still shuts down gracefully (exit 0,
// its "shutting down" line) instead of dying by the signal's default action.
TEST(ServeShutdown, SigtermReachingAThreadGraphrtDidNotStartStillStopsGracefully) {
  for (int round = 0; round < 3; ++round) {
    ServerProcess s(kServeArgs, std::string("LD_PRELOAD=") + GRAPHRT_FOREIGN_THREAD_LIB);
    ASSERT_TRUE(s.ready()) << s.log();
    EXPECT_EQ(s.stop(), 0) << "round " << round << ": " << s.log();
    EXPECT_NE(s.log().find("signal 15: shutting down"), std::string::npos) << s.log();
  }
}

// 10,000 short requests over keep-alive connections: pools end empty and RSS stays flat.
TEST(ServeSoak, TenThousandRequests) {
  ServerProcess s(kServeArgs);
  ASSERT_TRUE(s.ready()) << s.log();
  const int total = 10000, clients = 32;
  std::atomic<int> next{0}, failed{0};
  std::mutex why_mu;
  std::string why;  // the first failures: httplib's error or the status and body
  long rss_warm = 0;
  auto worker = [&] {
    httplib::Client c = s.client();
    c.set_keep_alive(true);
    int i;
    while ((i = next++) < total) {
      json body = {{"input_ids", {i % 512, (i * 7) % 512, 5}}, {"sampling_params", {{"max_new_tokens", 2}, {"temperature", 0}, {"ignore_eos", true}}}};
      auto r = c.Post("/generate", body.dump(), "application/json");
      if (!r || r->status != 200) {
        ++failed;
        std::lock_guard<std::mutex> lock(why_mu);
        if (why.size() < 2000)
          why += fmt::format("request {}: {}\n", i,
                             r ? fmt::format("status {} {}", r->status, r->body) : httplib::to_string(r.error()));
      }
      if (i == 1000) rss_warm = s.rss_kib();
    }
  };
  std::vector<std::thread> ts;
  for (int k = 0; k < clients; ++k) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  EXPECT_EQ(failed.load(), 0) << why << s.log();
  const long rss_end = s.rss_kib();
  EXPECT_EQ(settled_metric(s, "graphrt_kv_used_tokens", 0), 0);
  EXPECT_EQ(settled_metric(s, "graphrt_request_slots_used", 0), 0);
  EXPECT_EQ(settled_metric(s, "graphrt_num_running_requests", 0), 0);
  EXPECT_EQ(metric(s, "graphrt_num_queue_requests"), 0);
  EXPECT_EQ(metric(s, "graphrt_requests_total{finish_reason=\"length\"}"), total);
  // Flat: no growth per request beyond allocator noise (16 MiB over 9,000 requests is < 2 KiB each).
  EXPECT_LT(rss_end - rss_warm, 16 * 1024) << "RSS " << rss_warm << " KiB after 1000, " << rss_end << " at the end";
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
}  // namespace grt
#endif  // GRAPHRT_WITH_HTTP

TEST(HttpServerDefaults, ThreadsFollowTheRequestSlotsUpTo1040) {
  EXPECT_EQ(grt::default_http_threads(32), 80);
  EXPECT_EQ(grt::default_http_threads(512), 1040);
  EXPECT_EQ(grt::default_http_threads(4096), 1040);
  EXPECT_EQ(grt::default_http_threads(0), 1040);  // sized later from the KV cache
}
