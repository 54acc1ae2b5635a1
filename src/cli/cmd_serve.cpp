// graphrt serve: the OpenAI-compatible HTTP server on the continuous-batching scheduler.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/server_args.h"
#include "cli/shutdown_signal.h"
#include "model/model_loader.h"
#include "cli/text_setup.h"
#include "cli/tp_launch.h"
#include "core/logging.h"
#ifdef GRAPHRT_WITH_HTTP
#include "server/http_server.h"
#endif

namespace grt {

void register_serve(CLI::App& app) {
  struct Opts {
    ServerArgs args;
    std::string host = "127.0.0.1";
    int port = 30000;
    std::string served_model_name;
    int http_threads = 0;
    double grace = 10;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (continuous batching)");
  opts->args.add_to(*cmd);
  cmd->add_option("--host", opts->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", opts->port, "port (0: any free one, printed at start)")->capture_default_str();
  cmd->add_option("--served-model-name", opts->served_model_name, "model name in responses (default: --model-path)");
  cmd->add_option("--http-threads", opts->http_threads, "HTTP worker threads (0: 2 x --max-running-requests + 16, at most 1040; a request holds one while it runs)");
  cmd->add_option("--graceful-shutdown-timeout", opts->grace,
                  "seconds in-flight requests may finish after SIGINT/SIGTERM before they are aborted")
      ->capture_default_str();
  cmd->callback([opts] {
#ifndef GRAPHRT_WITH_HTTP
    GRT_FAIL("graphrt was built without cpp-httplib (libcpp-httplib-dev), so it cannot serve");
#else
    // SIGINT/SIGTERM are blocked in every thread started from here (they inherit the mask); the
    // leader's ShutdownSignal takes them (cli/shutdown_signal.h).
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    const ServerArgs& a = opts->args;
    GRT_CHECK(opts->port >= 0 && opts->port < 65536, "--port {} is not a port", opts->port);
    GRT_CHECK(opts->grace >= 0, "--graceful-shutdown-timeout {} must not be negative", opts->grace);
    // Flags, then the model folder (config.json, with the loader's "loading model" errors), before
    // the tokenizer and eos ids are read from that folder.
    a.check();
    (void)load_model_config(a.model);
    const TpMember tp = join_tp(a);
    if (!tp.leader()) {
      // Rank 0 alone serves HTTP and handles SIGINT (it stops the followers); SIGTERM (rank 0's
      // group taking itself down) ends a follower at once.
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
      return follow_leader(a, tp);
    }
    ShutdownSignal shutdown;  // the leader's SIGINT / SIGTERM: a graceful stop
    TextSupport text = text_support_for(a.model);
    SchedulerOptions so = a.scheduler_options();
    so.eos_token_ids = eos_token_ids_of(a.model);
    so.text = text.stream;
    // A broken tensor-parallel group stops the server like a signal, then the command fails.
    auto group_error = std::make_shared<std::string>();
    auto group_error_mu = std::make_shared<std::mutex>();
    so.on_group_failure = [group_error, group_error_mu](const std::string& why) {
      {
        std::lock_guard<std::mutex> g(*group_error_mu);
        *group_error = why;
      }
      kill(getpid(), SIGTERM);  // the signal thread's ShutdownSignal::wait takes it
    };
    Scheduler sched([args = a, tp] { return make_runner(args, tp.comm, tp.device); }, so);
    HttpServerOptions ho;
    ho.host = opts->host;
    ho.port = opts->port;
    ho.model_name = opts->served_model_name.empty() ? a.model : opts->served_model_name;
    ho.threads = opts->http_threads;
    ho.shutdown_grace_s = opts->grace;
    HttpServer server(sched, text, ho, a.max_running_requests);
    const int port = server.bind();
    std::printf("graphrt serve: listening on http://%s:%d\n", opts->host.c_str(), port);
    std::fflush(stdout);
    std::thread signals([&] {
      const int sig = shutdown.wait();
      GRT_INFO("signal {}: shutting down", sig);
      server.shutdown();
    });
    std::thread serving([&] { server.serve(); });
    try {
      sched.wait_ready();
      GRT_INFO("ready: model loaded and graphs captured");
    } catch (const std::exception& e) {
      GRT_ERROR("cannot start: {}", e.what());
      shutdown.notify(SIGTERM);
      signals.join();
      serving.join();
      throw;
    }
    serving.join();
    signals.join();
    std::lock_guard<std::mutex> g(*group_error_mu);
    GRT_CHECK(group_error->empty(), "serve stopped: {}", *group_error);
#endif
  });
}

}  // namespace grt
