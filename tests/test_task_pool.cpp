// TaskPool: every task runs once, errors come back through the futures, and destruction runs
// what is still queued.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "core/task_pool.h"

namespace grt {
namespace {

TEST(TaskPool, RunsEveryTaskOnceOnItsWorkers) {
  std::atomic<int> sum{0};
  std::vector<std::future<void>> done;
  {
    TaskPool pool(3);
    EXPECT_EQ(pool.threads(), 3);
    for (int i = 1; i <= 100; ++i) done.push_back(pool.submit([&sum, i] { sum += i; }));
    for (auto& f : done) f.get();
    EXPECT_EQ(sum.load(), 5050);
  }
}

TEST(TaskPool, ErrorsComeBackThroughTheFuture) {
  TaskPool pool(1);
  auto bad = pool.submit([] { throw std::runtime_error("task failed on purpose"); });
  auto good = pool.submit([] {});
  EXPECT_THROW(bad.get(), std::runtime_error);
  EXPECT_NO_THROW(good.get());  // the worker survives a throwing task
}

TEST(TaskPool, DestructionRunsWhatIsStillQueued) {
  std::atomic<int> ran{0};
  {
    TaskPool pool(1);
    for (int i = 0; i < 20; ++i) (void)pool.submit([&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(TaskPool, RefusesZeroThreads) { EXPECT_THROW(TaskPool(0), Error); }

}  // namespace
}  // namespace grt
