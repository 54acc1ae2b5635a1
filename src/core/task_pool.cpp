#include "core/task_pool.h"

#include "core/error.h"

namespace grt {

TaskPool::TaskPool(int threads) {
  GRT_CHECK(threads >= 1, "a task pool needs at least one thread, got {}", threads);
  workers_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::future<void> TaskPool::submit(std::function<void()> task) {
  std::packaged_task<void()> p(std::move(task));
  std::future<void> f = p.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    GRT_CHECK(!stopping_, "a task submitted to a task pool that is shutting down");
    queue_.push_back(std::move(p));
  }
  ready_.notify_one();
  return f;
}

void TaskPool::work() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // an exception is stored in the task's future
  }
}

}  // namespace grt
