#pragma once
// Op timing on a GPU with CUDA events, into the executor's Profiler under the
// simulator's op names (exec/runtime/profiler.hpp), so GPU runs produce the same
// summary and Chrome trace as CPU runs. Host wall time around an asynchronous launch
// measures the launch, not the kernel; events recorded on the stream measure the kernel.
//
// Recording never waits: begin()/end() enqueue events, flush() (once per step) waits for
// them and hands the ops to the profiler. Durations are the events' elapsed times; start
// times are placed on the profiler's host clock through an anchor event recorded right
// after a stream synchronize, so they are accurate to a few microseconds.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "exec/runtime/profiler.hpp"

namespace twinsim::exec {

class CudaOpTimer {
 public:
  CudaOpTimer(Profiler& profiler, cudaStream_t stream);
  ~CudaOpTimer();
  CudaOpTimer(const CudaOpTimer&) = delete;
  CudaOpTimer& operator=(const CudaOpTimer&) = delete;

  void begin(std::string name);  // ops do not nest: end() closes the last begin()
  void end();
  // Waits for the recorded ops, reports them to the profiler, re-anchors the clock.
  void flush();

 private:
  struct Op {
    std::string name;
    cudaEvent_t start;
    cudaEvent_t stop;
  };
  cudaEvent_t take_event();
  void anchor();

  Profiler& profiler_;
  cudaStream_t stream_;
  cudaEvent_t anchor_event_ = nullptr;
  Profiler::Clock::time_point anchor_host_;
  std::vector<Op> ops_;              // recorded, not yet flushed
  std::vector<cudaEvent_t> spare_;   // event pool: creating events per op costs microseconds
  bool open_ = false;
};

// `CudaOpScope op(timer, "layer3.attn.core.fwd");` times the kernels launched in its scope.
class CudaOpScope {
 public:
  CudaOpScope(CudaOpTimer& timer, std::string name) : timer_(timer) { timer_.begin(std::move(name)); }
  ~CudaOpScope() { timer_.end(); }
  CudaOpScope(const CudaOpScope&) = delete;
  CudaOpScope& operator=(const CudaOpScope&) = delete;

 private:
  CudaOpTimer& timer_;
};

}  // namespace twinsim::exec
