// TaskPool: a few worker threads running submitted tasks in submission order (FIFO queue, each
// task on whichever worker is free). Graph capture uses it to instantiate one shape's graphs while
// the capturing thread records the next shape (graph/shape_graph_runner.h).
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace grt {

class TaskPool {
 public:
  // Starts `threads` workers (>= 1).
  explicit TaskPool(int threads);
  // Runs every task still queued, then joins the workers.
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`; the future holds its exception, if it throws.
  std::future<void> submit(std::function<void()> task);
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  void work();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace grt
