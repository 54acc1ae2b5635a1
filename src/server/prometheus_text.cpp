#include "server/prometheus_text.h"

#include <fmt/format.h>

#include <array>

namespace grt {
namespace {

void head(std::string& o, const char* name, const char* type, const char* help) {
  o += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}
void histogram(std::string& o, const char* name, const char* help, const Histogram& h) {
  head(o, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cum += h.counts[i];
    o += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cum);
  }
  cum += h.counts.back();
  o += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, h.sum, name, h.count);
}

// One counter series per step mode (extend, decode, mixed).
template <typename T>
void by_mode(std::string& o, const char* name, const char* help, const std::array<T, 3>& v) {
  head(o, name, "counter", help);
  for (size_t m = 0; m < 3; ++m) o += fmt::format("{}{{mode=\"{}\"}} {}\n", name, kStepModeNames[m], v[m]);
}

}  // namespace

std::string prometheus_text(const ServingSnapshot& s, const HttpCounters& http) {
  std::string o;
  head(o, "graphrt_requests_total", "counter", "Finished requests by finish reason.");
  o += fmt::format("graphrt_requests_total{{finish_reason=\"stop\"}} {}\n", s.requests_stop);
  o += fmt::format("graphrt_requests_total{{finish_reason=\"length\"}} {}\n", s.requests_length);
  o += fmt::format("graphrt_requests_total{{finish_reason=\"abort\"}} {}\n", s.requests_abort);
  head(o, "graphrt_prompt_tokens_total", "counter", "Prompt tokens prefilled (recomputed ones included).");
  o += fmt::format("graphrt_prompt_tokens_total {}\n", s.prompt_tokens);
  head(o, "graphrt_generation_tokens_total", "counter", "Tokens generated.");
  o += fmt::format("graphrt_generation_tokens_total {}\n", s.generation_tokens);
  head(o, "graphrt_retractions_total", "counter", "Requests retracted to the queue because the KV cache ran out.");
  o += fmt::format("graphrt_retractions_total {}\n", s.retractions);
  head(o, "graphrt_num_running_requests", "gauge", "Requests admitted (prefilling or decoding).");
  o += fmt::format("graphrt_num_running_requests {}\n", s.running);
  head(o, "graphrt_num_queue_requests", "gauge", "Requests waiting for admission.");
  o += fmt::format("graphrt_num_queue_requests {}\n", s.waiting);
  head(o, "graphrt_kv_used_tokens", "gauge", "KV cache token slots in use.");
  o += fmt::format("graphrt_kv_used_tokens {}\n", s.kv_used);
  head(o, "graphrt_kv_total_tokens", "gauge", "KV cache token slots.");
  o += fmt::format("graphrt_kv_total_tokens {}\n", s.kv_total);
  head(o, "graphrt_token_usage", "gauge", "Share of the KV cache in use.");
  o += fmt::format("graphrt_token_usage {}\n", s.kv_total > 0 ? static_cast<double>(s.kv_used) / s.kv_total : 0.0);
  head(o, "graphrt_request_slots_used", "gauge", "Request slots in use.");
  o += fmt::format("graphrt_request_slots_used {}\n", s.slots_used);
  head(o, "graphrt_forward_steps_total", "counter", "Forward steps by mode and how they ran (graph replay or eager).");
  for (size_t m = 0; m < 3; ++m) {
    o += fmt::format("graphrt_forward_steps_total{{mode=\"{}\",path=\"graph\"}} {}\n", kStepModeNames[m], s.graph_steps[m]);
    o += fmt::format("graphrt_forward_steps_total{{mode=\"{}\",path=\"eager\"}} {}\n", kStepModeNames[m], s.eager_steps[m]);
  }
  head(o, "graphrt_extend_steps_on_decode_graphs_total", "counter",
       "Extend and mixed steps that replayed a decode graph with one row per token (among the graph steps).");
  o += fmt::format("graphrt_extend_steps_on_decode_graphs_total {}\n", s.extend_row_steps);
  head(o, "graphrt_extend_steps_on_full_graphs_total", "counter",
       "Extend steps of one request that replayed a full extend graph, attention captured (among the graph steps).");
  o += fmt::format("graphrt_extend_steps_on_full_graphs_total {}\n", s.full_extend_steps);
  by_mode(o, "graphrt_step_seconds_total",
          "Seconds from each step's forward call to its sampled tokens on the host, by mode (steps do not overlap).",
          s.step_seconds);
  by_mode(o, "graphrt_step_tokens_total", "Tokens forwarded, by step mode.", s.step_tokens);
  by_mode(o, "graphrt_step_context_tokens_total",
          "Sum over the rows of each step of their sequence lengths (the tokens attention reads), by step mode.",
          s.step_context_tokens);
  head(o, "graphrt_graph_padding_total", "counter",
       "Shape units replayed beyond the live batch: rows of decode graphs, tokens of piecewise and full extend "
       "graphs.");
  o += fmt::format("graphrt_graph_padding_total{{graph=\"decode\"}} {}\n", s.decode_graph_padding);
  o += fmt::format("graphrt_graph_padding_total{{graph=\"piecewise\"}} {}\n", s.piecewise_graph_padding);
  o += fmt::format("graphrt_graph_padding_total{{graph=\"full_extend\"}} {}\n", s.full_extend_graph_padding);
  histogram(o, "graphrt_decode_step_rows", "Rows (requests) of each decode step.", s.decode_rows);
  histogram(o, "graphrt_extend_step_tokens", "Tokens of each extend or mixed step.", s.extend_tokens);
  histogram(o, "graphrt_time_to_first_token_seconds", "Time to first token.", s.ttft);
  histogram(o, "graphrt_inter_token_latency_seconds", "Time between two tokens of a request.", s.itl);
  histogram(o, "graphrt_e2e_request_latency_seconds", "Arrival to last token.", s.e2e);
  histogram(o, "graphrt_step_host_seconds",
            "Host time per scheduler step that the device waits for (previous tokens ready to next forward call).",
            s.step_host);
  histogram(o, "graphrt_step_host_overlapped_seconds",
            "Host time per scheduler step spent planning ahead while the device ran the previous step.",
            s.step_host_overlapped);
  head(o, "graphrt_http_responses_total", "counter", "HTTP responses by status class.");
  o += fmt::format("graphrt_http_responses_total{{code=\"2xx\"}} {}\n", http.ok);
  o += fmt::format("graphrt_http_responses_total{{code=\"4xx\"}} {}\n", http.client_errors);
  o += fmt::format("graphrt_http_responses_total{{code=\"5xx\"}} {}\n", http.server_errors);
  return o;
}

}  // namespace grt
