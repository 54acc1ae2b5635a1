// Each subcommand of the graphrt command registers itself on the app; its callback runs it.
#pragma once
#include <CLI/CLI.hpp>

namespace grt {

void register_generate(CLI::App& app);
void register_score(CLI::App& app);
void register_make_model(CLI::App& app);
void register_selftest(CLI::App& app);
void register_bench(CLI::App& app);
void register_inspect(CLI::App& app);
void register_serve(CLI::App& app);
// `graphrt tokenize` and `graphrt detokenize` (cmd_tokenize.cpp).
void register_tokenize(CLI::App& app);
void register_chat_template(CLI::App& app);

}  // namespace grt
