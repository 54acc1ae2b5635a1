// graphrt: run LLMs from Hugging Face folders in CUDA-graph mode.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/tp_launch.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"graphrt: LLM inference in CUDA-graph mode"};
  grt::set_process_args(argc, argv);  // --tp-size: ranks 1..N-1 run this command line too
  app.require_subcommand(1);
  grt::register_generate(app);
  grt::register_score(app);
  grt::register_make_model(app);
  grt::register_selftest(app);
  grt::register_bench(app);
  grt::register_inspect(app);
  grt::register_serve(app);
  grt::register_tokenize(app);
  grt::register_chat_template(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and friends exit 0; every bad flag exits 1, like every other error.
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const grt::Error& e) {
    std::fprintf(stderr, "graphrt: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graphrt: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
