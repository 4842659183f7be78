#pragma once
// Where kernels::cuda calls run. The kernels keep the CPU kernels' argument lists (no
// stream or handle argument), so the stream is per host thread state: every call on
// this thread launches on current_stream(), and GEMMs use this thread's cuBLAS handle
// bound to that stream. Calls are asynchronous with respect to the host unless a
// function says otherwise (cross_entropy_forward returns the loss, so it waits).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace twinsim::kernels::cuda {

// The legacy default stream (0) until set. The caller owns the stream.
cudaStream_t current_stream();
void set_current_stream(cudaStream_t stream);

// This thread's cuBLAS handle (created on first use), bound to current_stream().
cublasHandle_t cublas_handle();

// Sets the current stream for one scope and restores the previous one after.
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream) : previous_(current_stream()) { set_current_stream(stream); }
  ~StreamScope() { set_current_stream(previous_); }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
};

// Blocks of `threads` needed to cover n elements, capped for grid-stride loops
// (a few waves of blocks per SM keep every SM busy; more only adds launch cost).
inline int grid_for(long n, int threads) {
  long blocks = (n + threads - 1) / threads;
  const long cap = 65536;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

}  // namespace twinsim::kernels::cuda
