// Loaded into `graphrt serve` with LD_PRELOAD by test_serve.cpp: before main it starts a thread
// that blocks no signal, as compute-sanitizer and profilers do, so the kernel may deliver a
// SIGTERM sent to the process to that thread instead of graphrt's own.
#include <pthread.h>
#include <unistd.h>

namespace {

void* idle(void*) {
  for (;;) pause();  // returns after each handler that runs here
  return nullptr;
}

__attribute__((constructor)) void start_foreign_thread() {
  pthread_t t;
  if (pthread_create(&t, nullptr, idle, nullptr) == 0) pthread_detach(t);
}

}  // namespace
