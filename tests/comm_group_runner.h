// Running real tensor-parallel groups of tests/workers/comm_worker for the communicator tests
// (tests/test_communicator.cpp on the CPU, tests/cuda/test_nccl.cpp with NCCL).
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace grt::testing {

struct GroupRun {
  int exit_code = -1;
  std::string output;  // every rank's stdout and stderr
};

inline bool process_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string s((std::istreambuf_iterator<char>(stat)), {});
  auto p = s.rfind(')');
  return p != std::string::npos && p + 2 < s.size() && s[p + 2] == 'Z';  // a zombie is gone too
}

// Runs the worker as rank 0 of a group (under `timeout 30`: a hang fails the test), then waits
// (up to 30 s) until every rank that said it joined has ended, so their last words are in.
inline const std::string kWorker = GRAPHRT_COMM_WORKER;

// Runs `command` (a shell command starting the group) under `timeout 30`, then as run_group.
inline GroupRun run_shell_group(const std::string& command) {
  static int counter = 0;
  const std::string file =
      ::testing::TempDir() + "comm_worker_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  const std::string cmd = "timeout 30 " + command + " >" + file + " 2>&1";
  GroupRun r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto read = [&] {
    std::ifstream f(file);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  std::regex pid_re(R"(\(pid (\d+)\))");
  std::string text = read();
  std::set<int> pids;
  for (std::sregex_iterator it(text.begin(), text.end(), pid_re), end; it != end; ++it)
    pids.insert(std::stoi((*it)[1]));
  for (int i = 0; i < 300; ++i) {
    bool all_gone = true;
    for (int p : pids) all_gone = all_gone && process_gone(p);
    if (all_gone) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int p : pids) EXPECT_TRUE(process_gone(p)) << "rank process " << p << " outlived its group\n" << read();
  r.output = read();
  std::remove(file.c_str());
  return r;
}

// `launcher` (e.g. "mpirun -np 2") starts every rank itself; else the worker spawns them.
inline GroupRun run_group(const std::string& args, const std::string& launcher = "") {
  return run_shell_group(launcher + " " + kWorker + " " + args);
}

// "rank R: <check> ok <hash>" lines: every rank passes every check with the same bytes.
inline void expect_collectives_agree(int tp, const GroupRun& r) {
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::regex line_re(R"(rank (\d+): (.+) (ok|WRONG) ([0-9a-f]{16}))");
  std::map<std::string, std::map<int, std::string>> hashes;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    EXPECT_EQ(m[3], "ok") << line;
    hashes[m[2]][std::stoi(m[1])] = m[4];
  }
  const std::vector<std::string> checks = {
      "all_reduce_sum_ f32",    "all_reduce_sum_ bf16",      "all_gather",     "broadcast_",
      "broadcast_bytes root 0", "broadcast_bytes last root", "all_reduce_min", "graph replay"};
  for (const auto& c : checks) {
    ASSERT_EQ(hashes[c].size(), static_cast<size_t>(tp)) << c << "\n" << r.output;
    for (const auto& [rank, h] : hashes[c]) EXPECT_EQ(h, hashes[c][0]) << c << " differs on rank " << rank;
  }
  for (int rank = 0; rank < tp; ++rank)
    EXPECT_NE(r.output.find("rank " + std::to_string(rank) + ": done"), std::string::npos) << r.output;
}

// `extra`: more worker arguments (e.g. "--device cuda").
inline void expect_collectives_agree(int tp, const std::string& launcher = "", const std::string& extra = "") {
  expect_collectives_agree(tp,
                           run_group("collectives --tp " + std::to_string(tp) + " --timeout 20 " + extra, launcher));
}

}  // namespace grt::testing
