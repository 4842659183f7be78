#include "exec/cpu/worker_stream.hpp"

#include <utility>

namespace twinsim::exec {

WorkerStream::WorkerStream() : worker_([this] { run(); }) {}

WorkerStream::~WorkerStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  worker_.join();
}

void WorkerStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_ready_.notify_one();
}

void WorkerStream::synchronize() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkerStream::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool broken = error_ != nullptr;  // after an error, nothing runs until synchronize() reports it
    lock.unlock();
    std::exception_ptr failed;
    try {
      if (!broken) task();
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed && !error_) error_ = failed;
    busy_ = false;
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace twinsim::exec
