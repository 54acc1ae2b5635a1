// Runs the graphrt command for end-to-end tests.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace grt::testing {

struct CommandResult {
  int exit_code;
  std::string out;  // stdout
  std::string all;  // stdout + stderr
};

// Runs `command` through the shell; stderr is collected into `all` after stdout.
inline CommandResult run_command(const std::string& command) {
  static int counter = 0;
  std::string err_file = ::testing::TempDir() + "graphrt_stderr_" + std::to_string(getpid()) + "_" +
                         std::to_string(counter++);
  std::string cmd = command + " 2>" + err_file;
  CommandResult r{-1, "", ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE* e = fopen(err_file.c_str(), "r");
  r.all = r.out;
  if (e) {
    while ((n = fread(buf.data(), 1, buf.size(), e)) > 0) r.all.append(buf.data(), n);
    fclose(e);
  }
  std::remove(err_file.c_str());
  return r;
}

// `args` is appended to the graphrt binary's path and run through the shell.
inline CommandResult run_graphrt(const std::string& args) { return run_command(std::string(GRAPHRT_BIN) + " " + args); }

}  // namespace grt::testing
