// graphrt bench serving: a load generator like sglang.bench_serving. N requests with random
// token-id prompts (lengths uniform in [ratio * len, len] as sglang's --random-range-ratio, or in
// [min, len] with --random-{input,output}-min-len) or prompts from a JSONL file, sent as
// streamed /v1/completions at a request rate (Poisson) and/or a max concurrency to a server on
// this machine; reports throughput and TTFT / ITL / TPOT / end-to-end latency.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "bench/bench_common.h"
#include "core/error.h"
#include "core/progress.h"
#include "server/sse_reader.h"
#ifdef GRAPHRT_WITH_HTTP
#include <httplib.h>
#endif

namespace grt {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ServingOpts {
  std::string host = "127.0.0.1";
  int port = 30000;
  int num_prompts = 100;
  int input_len = 128, output_len = 32;
  double range_ratio = 0.5;
  int input_min = 0, output_min = 0;  // > 0: lower bound of the lengths instead of the ratio
  int vocab = 256;
  std::string dataset;
  double request_rate = 0;  // 0: all at once
  int max_concurrency = 64;
  uint64_t seed = 1;
  double timeout_s = 600;
  bool json_out = false;
};

struct Job {
  json prompt;
  int input_len = 0, output_len = 0;
};

struct Result {
  bool ok = false;
  std::string error;
  int prompt_tokens = 0, output_tokens = 0;
  double ttft = 0, e2e = 0;
  std::vector<double> itl;
};

struct Stats {
  double mean = 0, median = 0, p99 = 0;
};
Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto pct = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  s.median = pct(0.5);
  s.p99 = pct(0.99);
  return s;
}

std::vector<Job> make_jobs(const ServingOpts& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<Job> jobs;
  // sglang: randint(max(int(len * ratio), 1), len + 1).
  auto len_in = [&](int len, int min_len) {
    const int lo = min_len > 0 ? min_len : std::max(1, static_cast<int>(len * o.range_ratio));
    return std::uniform_int_distribution<int>(lo, std::max(lo, len))(rng);
  };
  if (!o.dataset.empty()) {
    std::ifstream f(o.dataset);
    GRT_CHECK(f.good(), "cannot read --dataset-path {}", o.dataset);
    std::string line;
    int n = 0;
    while (static_cast<int>(jobs.size()) < o.num_prompts && std::getline(f, line)) {
      ++n;
      if (line.empty()) continue;
      json j;
      try {
        j = json::parse(line);
      } catch (const std::exception& e) {
        GRT_FAIL("{} line {} is not JSON: {}", o.dataset, n, e.what());
      }
      GRT_CHECK(j.contains("prompt") && (j["prompt"].is_string() || j["prompt"].is_array()),
                "{} line {}: needs \"prompt\" (text or token ids)", o.dataset, n);
      Job job;
      job.prompt = j["prompt"];
      job.input_len = job.prompt.is_array() ? static_cast<int>(job.prompt.size()) : 0;
      job.output_len = j.contains("output_len") ? j["output_len"].get<int>() : len_in(o.output_len, o.output_min);
      jobs.push_back(std::move(job));
    }
    GRT_CHECK(!jobs.empty(), "{} holds no prompts", o.dataset);
    return jobs;
  }
  std::uniform_int_distribution<int> tok(0, o.vocab - 1);
  for (int i = 0; i < o.num_prompts; ++i) {
    Job job;
    job.input_len = len_in(o.input_len, o.input_min);
    job.output_len = len_in(o.output_len, o.output_min);
    std::vector<int> ids(static_cast<size_t>(job.input_len));
    for (int& t : ids) t = tok(rng);
    job.prompt = ids;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

#ifdef GRAPHRT_WITH_HTTP
Result run_one(const ServingOpts& o, const Job& job) {
  Result r;
  httplib::Client cli(o.host, o.port);
  cli.set_read_timeout(static_cast<time_t>(o.timeout_s), 0);
  json body = {{"model", "default"},   {"prompt", job.prompt},  {"max_tokens", job.output_len},
               {"temperature", 0},      {"ignore_eos", true},    {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  const auto t0 = Clock::now();
  auto last = t0;
  bool first = true;
  SseReader sse;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        for (const std::string& ev : sse.feed({data, n})) {
          const auto payload = SseReader::data_of(ev);
          if (!payload || *payload == "[DONE]") continue;
          json j = json::parse(*payload, nullptr, false);
          if (j.is_discarded()) continue;
          if (j.contains("error")) {
            r.error = j["error"].value("message", "error");
            continue;
          }
          if (j.contains("usage") && j["usage"].is_object()) {
            r.prompt_tokens = j["usage"].value("prompt_tokens", 0);
            r.output_tokens = j["usage"].value("completion_tokens", 0);
          }
          if (!j.contains("choices") || j["choices"].empty()) continue;
          const auto now = Clock::now();
          if (first) r.ttft = std::chrono::duration<double>(now - t0).count();
          else r.itl.push_back(std::chrono::duration<double>(now - last).count());
          first = false;
          last = now;
        }
        return true;
      };
  auto res = cli.send(req);
  r.e2e = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!res) r.error = "connection failed: " + httplib::to_string(res.error());
  else if (res->status != 200) r.error = fmt::format("HTTP {}: {}", res->status, res->body);
  r.ok = r.error.empty() && !first;
  return r;
}
#endif

void run_serving(const ServingOpts& o) {
#ifndef GRAPHRT_WITH_HTTP
  (void)o;
  GRT_FAIL("graphrt was built without cpp-httplib (libcpp-httplib-dev): no bench serving");
#else
  GRT_CHECK(o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1",
            "--host {}: bench serving only talks to this machine (127.0.0.1, localhost, ::1)", o.host);
  GRT_CHECK(o.num_prompts > 0 && o.num_prompts <= 100000, "--num-prompts {} is not in [1, 100000]", o.num_prompts);
  GRT_CHECK(o.input_len > 0 && o.output_len > 0, "--random-input-len / --random-output-len must be positive");
  GRT_CHECK(o.range_ratio >= 0 && o.range_ratio <= 1, "--random-range-ratio {} is not in [0, 1]", o.range_ratio);
  GRT_CHECK(o.input_min >= 0 && o.input_min <= o.input_len, "--random-input-min-len {} is not in [0, {}]", o.input_min,
            o.input_len);
  GRT_CHECK(o.output_min >= 0 && o.output_min <= o.output_len, "--random-output-min-len {} is not in [0, {}]",
            o.output_min, o.output_len);
  GRT_CHECK(o.max_concurrency > 0 && o.max_concurrency <= 1024, "--max-concurrency {} is not in [1, 1024]",
            o.max_concurrency);
  GRT_CHECK(o.request_rate >= 0, "--request-rate {} must not be negative", o.request_rate);
  GRT_CHECK(o.timeout_s > 0 && o.timeout_s <= 3600, "--timeout {} is not in (0, 3600] s", o.timeout_s);
  {
    httplib::Client cli(o.host, o.port);
    auto h = cli.Get("/health");
    GRT_CHECK(h && h->status == 200, "no ready server at http://{}:{} (GET /health: {})", o.host, o.port,
              h ? std::to_string(h->status) : httplib::to_string(h.error()));
  }
  std::vector<Job> jobs = make_jobs(o);
  std::vector<Result> results(jobs.size());
  std::mt19937_64 rng(o.seed + 1);
  std::exponential_distribution<double> gap(o.request_rate > 0 ? o.request_rate : 1.0);
  std::mutex mu;
  std::condition_variable cv;
  int active = 0;
  ProgressBar bar("bench serving", jobs.size());
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(o.timeout_s);
  auto next_arrival = start;
  size_t sent = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (o.request_rate > 0) {
      std::this_thread::sleep_until(next_arrival);
      next_arrival += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
    }
    {
      std::unique_lock<std::mutex> lk(mu);
      if (!cv.wait_until(lk, deadline, [&] { return active < o.max_concurrency; })) break;
      ++active;
    }
    if (Clock::now() > deadline) break;
    ++sent;
    threads.emplace_back([&, i] {
      results[i] = run_one(o, jobs[i]);
      std::lock_guard<std::mutex> g(mu);
      --active;
      bar.step();
      cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  bar.finish();
  const double dur = std::chrono::duration<double>(Clock::now() - start).count();

  int ok = 0;
  int64_t in_tok = 0, out_tok = 0;
  int in_lo = 0, in_hi = 0, out_lo = 0, out_hi = 0;  // lengths asked for (of the prompts sent)
  for (size_t i = 0; i < sent; ++i) {
    const Job& jb = jobs[i];
    in_lo = i == 0 ? jb.input_len : std::min(in_lo, jb.input_len);
    in_hi = std::max(in_hi, jb.input_len);
    out_lo = i == 0 ? jb.output_len : std::min(out_lo, jb.output_len);
    out_hi = std::max(out_hi, jb.output_len);
  }
  const json lens = {{"input_min", in_lo}, {"input_max", in_hi}, {"output_min", out_lo}, {"output_max", out_hi}};
  std::vector<double> ttft, itl, tpot, e2e;
  std::string first_error;
  for (size_t i = 0; i < sent; ++i) {
    const Result& r = results[i];
    if (!r.ok) {
      if (first_error.empty()) first_error = r.error;
      continue;
    }
    ++ok;
    in_tok += r.prompt_tokens;
    out_tok += r.output_tokens;
    ttft.push_back(r.ttft * 1e3);
    e2e.push_back(r.e2e * 1e3);
    for (double x : r.itl) itl.push_back(x * 1e3);
    if (r.output_tokens > 1) tpot.push_back((r.e2e - r.ttft) * 1e3 / (r.output_tokens - 1));
  }
  const Stats st = stats_of(ttft), si = stats_of(itl), sp = stats_of(tpot), se = stats_of(e2e);
  auto sj = [](const Stats& s) { return json{{"mean", s.mean}, {"median", s.median}, {"p99", s.p99}}; };
  json j = {{"url", fmt::format("http://{}:{}", o.host, o.port)},
            {"num_prompts", jobs.size()},
            {"sent", sent},
            {"completed", ok},
            {"failed", static_cast<int>(sent) - ok},
            {"request_rate", o.request_rate > 0 ? json(o.request_rate) : json("inf")},
            {"max_concurrency", o.max_concurrency},
            {"duration_s", dur},
            {"requested_lengths", lens},
            {"total_input_tokens", in_tok},
            {"total_output_tokens", out_tok},
            {"request_throughput", ok / dur},
            {"input_throughput", static_cast<double>(in_tok) / dur},
            {"output_throughput", static_cast<double>(out_tok) / dur},
            {"ttft_ms", sj(st)},
            {"itl_ms", sj(si)},
            {"tpot_ms", sj(sp)},
            {"e2e_latency_ms", sj(se)}};
  if (!first_error.empty()) j["first_error"] = first_error;
  if (o.json_out) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("============ Serving Benchmark Result ============\n");
  std::printf("%-36s %12s\n", "URL:", j["url"].get<std::string>().c_str());
  std::printf("%-36s %12d\n", "Successful requests:", ok);
  std::printf("%-36s %12d\n", "Failed requests:", static_cast<int>(sent) - ok);
  std::printf("%-36s %12s\n", "Request rate (req/s):",
              o.request_rate > 0 ? fmt::format("{:.2f}", o.request_rate).c_str() : "inf");
  std::printf("%-36s %12d\n", "Max concurrency:", o.max_concurrency);
  std::printf("%-36s %12.2f\n", "Benchmark duration (s):", dur);
  std::printf("%-36s %12lld\n", "Total input tokens:", static_cast<long long>(in_tok));
  std::printf("%-36s %12lld\n", "Total generated tokens:", static_cast<long long>(out_tok));
  std::printf("%-36s %12.2f\n", "Request throughput (req/s):", ok / dur);
  std::printf("%-36s %12.2f\n", "Input token throughput (tok/s):", static_cast<double>(in_tok) / dur);
  std::printf("%-36s %12.2f\n", "Output token throughput (tok/s):", static_cast<double>(out_tok) / dur);
  auto row = [](const char* name, const Stats& s) {
    std::printf("%-12s mean %10.2f   median %10.2f   p99 %10.2f  (ms)\n", name, s.mean, s.median, s.p99);
  };
  row("TTFT", st);
  row("ITL", si);
  row("TPOT", sp);
  row("E2E", se);
  if (!first_error.empty()) std::printf("first error: %s\n", first_error.c_str());
#endif
}

}  // namespace

void register_bench_serving(CLI::App& bench) {
  auto o = std::make_shared<ServingOpts>();
  CLI::App* cmd = bench.add_subcommand("serving", "load a running `graphrt serve` like sglang.bench_serving");
  cmd->add_option("--host", o->host, "server address (this machine only)")->capture_default_str();
  cmd->add_option("--port", o->port, "server port")->capture_default_str();
  cmd->add_option("--num-prompts", o->num_prompts, "requests to send")->capture_default_str();
  cmd->add_option("--random-input-len", o->input_len, "longest random prompt (tokens)")->capture_default_str();
  cmd->add_option("--random-output-len", o->output_len, "longest output (tokens)")->capture_default_str();
  cmd->add_option("--random-range-ratio", o->range_ratio, "lengths uniform in [ratio * len, len]")
      ->capture_default_str();
  cmd->add_option("--random-input-min-len", o->input_min,
                  "shortest random prompt (tokens; 0: --random-range-ratio * --random-input-len)")
      ->capture_default_str();
  cmd->add_option("--random-output-min-len", o->output_min,
                  "shortest output (tokens; 0: --random-range-ratio * --random-output-len)")
      ->capture_default_str();
  cmd->add_option("--random-vocab-size", o->vocab, "random prompt ids are in [0, this)")->capture_default_str();
  cmd->add_option("--dataset-path", o->dataset, "JSONL of {\"prompt\": text or ids, \"output_len\": n} instead");
  cmd->add_option("--request-rate", o->request_rate, "requests per second, Poisson (0: all at once)")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "requests in flight at most")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of lengths, ids and arrivals")->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "stop sending after this many seconds")->capture_default_str();
  cmd->add_flag("--json", o->json_out, "print the results as JSON");
  cmd->callback([o] { run_serving(*o); });
}

}  // namespace grt
