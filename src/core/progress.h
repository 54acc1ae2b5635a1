// A one-line progress bar on stderr for long work (graph capture). Quiet when stderr is not a
// terminal or the log level is above info, so logs and CI output stay clean.
#pragma once
#include <chrono>
#include <string>

namespace grt {

class ProgressBar {
 public:
  ProgressBar(std::string label, size_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks one more item done; `item` describes it ("bs=64").
  void step(const std::string& item = "");
  void finish();
  bool visible() const { return visible_; }

 private:
  std::string label_;
  size_t total_;
  size_t done_ = 0;
  bool visible_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace grt
