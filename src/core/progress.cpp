#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/logging.h"

namespace grt {

ProgressBar::ProgressBar(std::string label, size_t total)
    : label_(std::move(label)),
      total_(total),
      visible_(isatty(STDERR_FILENO) && log_level() <= LogLevel::Info),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::step(const std::string& item) {
  ++done_;
  if (!visible_) return;
  constexpr int kWidth = 30;
  int filled = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu %.2fs %s\033[K", label_.c_str(), bar.c_str(), done_, total_,
               secs, item.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (visible_ && done_ > 0) std::fprintf(stderr, "\n");
}

}  // namespace grt
