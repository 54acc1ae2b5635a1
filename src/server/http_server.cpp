#include "server/http_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/logging.h"
#include "server/api_protocol.h"

namespace grt {
namespace {

using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(50);

void send_error(httplib::Response& res, int status, const std::string& msg, const std::string& param = {}) {
  const char* type = status == 400 ? "BadRequestError" : status == 404 ? "NotFoundError"
                     : status == 503 ? "ServiceUnavailableError" : "InternalServerError";
  res.status = status;
  res.set_content(error_body(msg, type, param, status).dump(), "application/json");
}

}  // namespace

int default_http_threads(int max_running_requests) {
  constexpr int kMostRequests = 512;
  const int r = max_running_requests > 0 ? std::min(max_running_requests, kMostRequests) : kMostRequests;
  return 2 * r + 16;
}

HttpServer::HttpServer(Scheduler& scheduler, TextSupport text, HttpServerOptions options, int max_running)
    : scheduler_(scheduler), text_(std::move(text)), options_(std::move(options)),
      svr_(std::make_unique<httplib::Server>()) {
  const int threads = options_.threads > 0 ? options_.threads : default_http_threads(max_running);
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr_->set_payload_max_length(64u << 20);
  svr_->set_keep_alive_timeout(5);
  // httplib closes a keep-alive connection after 5 requests by default: every reconnect is a
  // chance for a client to race the close (a soak of 10,000 requests lost 3 that way on CI).
  // Clients that keep a connection (benchmarks, proxies) keep it, as with uvicorn.
  svr_->set_keep_alive_max_count(100000);
  // The listening socket, to raise its backlog after bind (below).
  svr_->set_socket_options([this](int sock) {
    httplib::default_socket_options(sock);
    listen_socket_ = sock;
  });
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  int port = options_.port;
  if (port == 0) {
    port = svr_->bind_to_any_port(options_.host);
    GRT_CHECK(port > 0, "cannot bind {} to any port", options_.host);
  } else {
    GRT_CHECK(svr_->bind_to_port(options_.host, port), "cannot bind {}:{} (in use, or not an address here)",
              options_.host, port);
  }
  // httplib listens with a backlog of 5: a burst of new connections (32 clients starting at once
  // in the soak test) overflowed it and 3 requests read a reset. Linux lets listen() be called
  // again on a listening socket to change its backlog.
  if (listen_socket_ >= 0 && ::listen(listen_socket_, SOMAXCONN) != 0)
    GRT_WARN("could not raise the listen backlog of {}:{}: {}", options_.host, port, std::strerror(errno));
  return port;
}

void HttpServer::serve() { svr_->listen_after_bind(); }

void HttpServer::count(int status) {
  std::lock_guard<std::mutex> g(counters_mu_);
  (status < 400 ? counters_.ok : status < 500 ? counters_.client_errors : counters_.server_errors)++;
}

void HttpServer::shutdown() {
  if (draining_.exchange(true)) return;
  GRT_INFO("shutting down: no new requests; waiting up to {} s for {} in flight", options_.shutdown_grace_s,
           scheduler_.idle() ? "none" : "those");
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.shutdown_grace_s);
  while (!scheduler_.idle() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!scheduler_.idle()) {
    GRT_WARN("grace period over: aborting the requests still in flight");
    scheduler_.abort_all();
    for (int i = 0; i < 250 && !scheduler_.idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Let handlers write their last events before the sockets close.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  svr_->stop();
}

void HttpServer::routes() {
  svr_->set_logger([this](const httplib::Request&, const httplib::Response& res) { count(res.status); });
  svr_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, what);
  });
  svr_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) send_error(res, 404, "no route " + req.method + " " + req.path);
  });

  svr_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_) return send_error(res, 503, "shutting down");
    if (!scheduler_.ready()) return send_error(res, 503, "loading the model and capturing graphs");
    res.set_content("{}", "application/json");
  });
  svr_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json m = {{"id", options_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "graphrt"}};
    if (scheduler_.ready()) m["max_model_len"] = scheduler_.limits().max_context;
    res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(), "application/json");
  });
  svr_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    HttpCounters c;
    {
      std::lock_guard<std::mutex> g(counters_mu_);
      c = counters_;
    }
    res.set_content(prometheus_text(scheduler_.metrics().snapshot(), c), "text/plain; version=0.0.4");
  });

  auto handle = [this](ApiKind kind) {
    return [this, kind](const httplib::Request& req, httplib::Response& res) {
      if (draining_) return send_error(res, 503, "the server is shutting down");
      if (!scheduler_.ready()) return send_error(res, 503, "the model is still loading");
      auto api = std::make_shared<ApiRequest>();
      auto hs = std::make_shared<std::vector<std::shared_ptr<RequestHandle>>>();
      try {
        *api = parse_api_request(kind, req.body, text_);
        if (api->params.max_tokens < 0)  // chat without a limit: the rest of the context
          api->params.max_tokens =
              std::max(0, scheduler_.limits().max_context - static_cast<int>(api->params.prompt.size()));
        std::vector<RequestParams> choices;
        for (int i = 0; i < api->n; ++i) choices.push_back(choice_params(*api, i));
        *hs = scheduler_.submit_all(std::move(choices));  // all choices or none, batched together
      } catch (const RequestRejected& e) {
        return send_error(res, e.kind() == RequestRejected::Kind::kInvalid ? 400 : 503, e.what(), e.param());
      }
      const char* prefix = kind == ApiKind::kChat ? "chatcmpl-" : kind == ApiKind::kCompletion ? "cmpl-" : "";
      const std::string id = fmt::format("{}{}", prefix, hs->front()->id());
      auto outs = std::make_shared<std::vector<std::unique_ptr<ApiResponse>>>();
      const bool several = hs->size() > 1;
      for (size_t i = 0; i < hs->size(); ++i)
        outs->push_back(std::make_unique<ApiResponse>(*api, id, options_.model_name, text_, static_cast<int>(i), !several));
      if (!api->stream) {
        for (size_t i = 0; i < hs->size(); ++i) {
          while (true) {
            auto ev = (*hs)[i]->next(std::chrono::milliseconds(1000));
            if (!ev) continue;
            if (ev->finish && *ev->finish == FinishReason::kAbort) {
              for (auto& h : *hs) h->cancel();
              return send_error(res, 503, ev->error.empty() ? "request aborted" : ev->error);
            }
            (*outs)[i]->add(*ev);
            if (ev->finish) break;
          }
        }
        res.set_content((several ? ApiResponse::merge(*outs) : outs->front()->body()).dump(), "application/json");
        return;
      }
      res.set_header("Cache-Control", "no-cache");
      auto cancel_all = [hs] {
        for (auto& h : *hs) h->cancel();
      };
      res.set_chunked_content_provider(
          "text/event-stream",
          [hs, outs, api, cancel_all, several](size_t, httplib::DataSink& sink) {
            std::vector<bool> finished(hs->size(), false);
            size_t left = hs->size();
            // One choice: wait on it. Several: visit them in turn, waiting briefly on each.
            const auto wait = several ? std::chrono::milliseconds(2) : kPoll;
            int idle_rounds = 0;
            while (left > 0) {
              bool any = false;
              for (size_t i = 0; i < hs->size(); ++i) {
                if (finished[i]) continue;
                auto ev = (*hs)[i]->next(wait);
                if (!ev) continue;
                any = true;
                const std::string data = (*outs)[i]->sse(*ev);
                if (!sink.write(data.data(), data.size())) {
                  cancel_all();  // the client went away
                  return false;
                }
                if (ev->finish && *ev->finish == FinishReason::kAbort && several) {
                  cancel_all();  // its events ended the stream ([DONE])
                  sink.done();
                  return true;
                }
                if (ev->finish) {
                  finished[i] = true;
                  --left;
                }
              }
              idle_rounds = any ? 0 : idle_rounds + 1;
              if (!any && (!several || static_cast<size_t>(idle_rounds) * hs->size() * 2 >= 100) && !sink.is_writable()) {
                cancel_all();
                return false;
              }
            }
            if (several) {
              const std::string tail = ApiResponse::close_stream(*outs);
              if (!sink.write(tail.data(), tail.size())) return false;
            }
            sink.done();
            return true;
          },
          [cancel_all](bool success) {
            if (!success) cancel_all();
          });
    };
  };
  svr_->Post("/v1/completions", handle(ApiKind::kCompletion));
  svr_->Post("/v1/chat/completions", handle(ApiKind::kChat));
  svr_->Post("/generate", handle(ApiKind::kGenerate));
}

}  // namespace grt
