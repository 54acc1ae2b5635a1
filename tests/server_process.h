// Starts `graphrt serve --port 0 ...` for end-to-end tests: reads the port it printed, waits for
// /health, and on destruction sends SIGTERM and records how it exited.
#pragma once
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace grt::testing {

class ServerProcess {
 public:
  // env: "NAME=value ..." set for the server only (empty: none).
  explicit ServerProcess(const std::string& args, const std::string& env = "") {
    int out[2];
    if (pipe(out) != 0) return;
    log_ = ::testing::TempDir() + "graphrt_serve_" + std::to_string(getpid()) + "_" + std::to_string(counter()++);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      std::string cmd = std::string("exec ") + (env.empty() ? "" : "env " + env + " ") + GRAPHRT_BIN +
                        " serve --host 127.0.0.1 --port 0 " + args + " 2>" + log_;
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
      std::string s(line);
      const auto at = s.find("listening on http://127.0.0.1:");
      if (at != std::string::npos) {
        port_ = std::stoi(s.substr(at + 30));
        break;
      }
    }
    stdout_ = f;
    if (port_ <= 0) return;
    httplib::Client c = client();
    for (int i = 0; i < 1200; ++i) {  // up to 60 s for loading and capture
      auto r = c.Get("/health");
      if (r && r->status == 200) {
        ready_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && exit_code_ == -2) stop();
    if (stdout_) fclose(stdout_);
    std::remove(log_.c_str());
  }
  // SIGTERM, then the exit status (0 expected); -1 if it did not exit by itself in 30 s.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 600; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    exit_code_ = -1;
    return exit_code_;
  }
  // Waits (without a signal) up to `seconds` for the server to exit by itself: its exit status,
  // or -1 when it is still running then (it is left running).
  int wait_exit(double seconds) {
    if (pid_ <= 0) return -1;
    if (exit_code_ != -2) return exit_code_;
    int status = 0;
    for (int i = 0; i < static_cast<int>(seconds * 20); ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    return c;
  }
  std::string log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // Resident set size of the server in KiB (from /proc).
  long rss_kib() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  pid_t pid_ = -1;
  int port_ = -1;
  bool ready_ = false;
  int exit_code_ = -2;
  FILE* stdout_ = nullptr;
  std::string log_;
};

}  // namespace grt::testing
