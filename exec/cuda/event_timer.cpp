#include "exec/cuda/event_timer.hpp"

#include <chrono>
#include <stdexcept>

#include "kernels/cuda/check.hpp"

namespace twinsim::exec {

CudaOpTimer::CudaOpTimer(Profiler& profiler, cudaStream_t stream) : profiler_(profiler), stream_(stream) {
  CUDA_CHECK(cudaEventCreate(&anchor_event_));
  anchor();
}

CudaOpTimer::~CudaOpTimer() {
  cudaStreamSynchronize(stream_);  // no throwing from a destructor; events must be idle to destroy
  for (Op& op : ops_) {
    cudaEventDestroy(op.start);
    cudaEventDestroy(op.stop);
  }
  for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  cudaEventDestroy(anchor_event_);
}

cudaEvent_t CudaOpTimer::take_event() {
  if (spare_.empty()) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
  cudaEvent_t e = spare_.back();
  spare_.pop_back();
  return e;
}

// The anchor event completes as soon as it is recorded on an idle stream, so its GPU
// time and the host time read right after waiting for it are the same instant (to within
// the wait's latency).
void CudaOpTimer::anchor() {
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  CUDA_CHECK(cudaEventRecord(anchor_event_, stream_));
  CUDA_CHECK(cudaEventSynchronize(anchor_event_));
  anchor_host_ = Profiler::Clock::now();
}

void CudaOpTimer::begin(std::string name) {
  if (open_) throw std::logic_error("CudaOpTimer::begin('" + name + "'): the previous op was not ended");
  Op op{std::move(name), take_event(), take_event()};
  CUDA_CHECK(cudaEventRecord(op.start, stream_));
  ops_.push_back(std::move(op));
  open_ = true;
}

void CudaOpTimer::end() {
  if (!open_) throw std::logic_error("CudaOpTimer::end() without begin()");
  CUDA_CHECK(cudaEventRecord(ops_.back().stop, stream_));
  open_ = false;
}

void CudaOpTimer::flush() {
  if (open_) throw std::logic_error("CudaOpTimer::flush() inside op '" + ops_.back().name + "'");
  auto at = [&](cudaEvent_t e) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, anchor_event_, e));
    return anchor_host_ + std::chrono::duration_cast<Profiler::Clock::duration>(
                              std::chrono::duration<double, std::milli>(ms));
  };
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (Op& op : ops_) {
    profiler_.record(op.name, at(op.start), at(op.stop));
    spare_.push_back(op.start);
    spare_.push_back(op.stop);
  }
  ops_.clear();
  anchor();
}

}  // namespace twinsim::exec
