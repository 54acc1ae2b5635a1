// The HTTP front end (cpp-httplib): OpenAI-compatible /v1/completions and /v1/chat/completions
// (SSE when streamed), /v1/models, SGLang's /generate, /health (503 until the runner is built and
// its graphs captured) and /metrics (Prometheus text). Every handler answers errors as OpenAI
// error objects; no request can end the server.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/scheduler.h"
#include "server/prometheus_text.h"
#include "server/text_support.h"

namespace httplib {
class Server;
}

namespace grt {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;  // 0: any free port
  std::string model_name = "default";
  int threads = 0;   // HTTP worker threads; 0: default_http_threads
  double shutdown_grace_s = 10;  // in-flight requests may finish for this long after SIGTERM
};

// Worker threads when none are given: a request holds one for its whole life (a stream too), so
// 2 x max_running_requests + 16 let the queue behind the running requests be read; at most 1040
// (max_running_requests 0, sized later from the KV cache, counts as 512). Connections beyond the
// threads wait for one; none is refused.
int default_http_threads(int max_running_requests);

class HttpServer {
 public:
  HttpServer(Scheduler& scheduler, TextSupport text, HttpServerOptions options, int max_running_requests);
  ~HttpServer();

  // Binds the socket; returns the port (Error when it cannot bind).
  int bind();
  // Serves until shutdown() (blocking).
  void serve();
  // Stops accepting requests (503), lets in-flight ones finish within the grace period, aborts the
  // rest, then stops serve(). Safe from any thread.
  void shutdown();

 private:
  void routes();
  void count(int status);

  Scheduler& scheduler_;
  TextSupport text_;
  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> svr_;
  int listen_socket_ = -1;  // the bound socket (set by httplib's socket-options hook)
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_id_{1};
  std::mutex counters_mu_;
  HttpCounters counters_;
};

}  // namespace grt
