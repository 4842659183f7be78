#pragma once
// A stream as a GPU has one: work enqueued by the host runs in order on a worker thread,
// after the call that enqueued it has returned; synchronize() waits for all of it. An
// exception thrown by a task is kept and rethrown by the next synchronize(), as a CUDA error
// surfaces at the next synchronizing call.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace twinsim::exec {

class WorkerStream {
 public:
  WorkerStream();
  ~WorkerStream();  // runs what is queued, then stops the worker
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  void enqueue(std::function<void()> task);
  void synchronize();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable drained_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts after the members it reads
};

}  // namespace twinsim::exec
