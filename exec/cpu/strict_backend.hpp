#pragma once
// The strict-device CPU backend: the CPU kernels, run the way a GPU runs its own, so that
// what would break on a GPU breaks here, on any machine, in a test:
//   * device memory lives in an arena the host cannot touch (device_arena.hpp): a host read
//     or write of a device pointer faults, and the fault handler names the rule;
//   * kernels and copies run on a stream, a worker thread (worker_stream.hpp), after the
//     call that enqueued them returns; synchronize() waits for them;
//   * a kernel argument that is not device memory is refused when the kernel is enqueued
//     (a GPU kernel cannot read pageable host memory);
//   * copies are explicit; copy_to_host_async into pinned host memory leaves the pages
//     unreadable until synchronize(), so a read that forgot to wait faults.
// Results are bitwise those of the CPU backend: the same kernels on the same bytes.
#include <cstddef>
#include <memory>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cpu/device_arena.hpp"
#include "exec/cpu/worker_stream.hpp"
#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

// The kernel table of the strict backend: each call checks and translates its pointers and
// enqueues the CPU kernel on the stream.
class StrictKernels final : public KernelTable {
 public:
  StrictKernels(DeviceArena& arena, WorkerStream& stream) : arena_(arena), stream_(stream) {}

  void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                  const KvCacheAttentionShape& shape) const override;
  std::size_t gemm_workspace_floats() const override { return cpu_.gemm_workspace_floats(); }
  void set_gemm_workspace(float* workspace) const override;

 protected:
  void do_gemm_forward(GemmTypes types, const void* a, const void* b, void* c, int m, int n, int k, bool trans_a,
                       bool trans_b, float alpha, float beta) const override;
  void do_linear_forward(Dtype type, const void* x, const void* weight, const void* bias, void* y, int tokens,
                         int in, int out) const override;
  void do_linear_backward_input(Dtype type, const void* dy, const void* weight, void* dx, int tokens, int in,
                                int out) const override;
  void do_linear_backward_weight(Dtype type, const void* dy, const void* x, void* dweight, int tokens, int in,
                                 int out, bool accumulate) const override;
  void do_linear_backward_bias(Dtype type, const void* dy, void* dbias, int tokens, int out,
                               bool accumulate) const override;
  void do_residual_forward(Dtype type, const void* x, const void* branch, const void* bias, void* y, int rows,
                           int cols) const override;
  void do_residual_backward(Dtype type, const void* dy, void* dbias, int rows, int cols, bool accumulate) const override;
  void do_vocab_embedding_forward(Dtype type, const int* tokens, const void* table, void* out, int count, int dim,
                            int row_start, int rows) const override;
  void do_vocab_embedding_backward(Dtype type, const int* tokens, const void* dout, void* dtable, int count, int dim,
                             int row_start, int rows) const override;
  void do_vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const override;
  void do_vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums,
                                  int tokens, int local_vocab, int vocab_start) const override;
  void do_vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss,
                              int tokens) const override;
  void do_vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                       float* dlogits, int tokens, int local_vocab, int vocab_start) const override;
  void do_rope(Dtype type, bool backward, const void* x, void* y, int batch, int seq, int heads, int head_dim,
               float theta, int pos_offset) const override;
  void do_layernorm_forward(Dtype type, const void* x, const void* gamma, const void* beta, void* y, float* mean,
                            float* rstd, int rows, int dim, float eps) const override;
  void do_layernorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* mean,
                             const float* rstd, void* dx, void* dgamma, void* dbeta, int rows, int dim,
                             bool accumulate) const override;
  void do_rmsnorm_forward(Dtype type, const void* x, const void* gamma, void* y, float* rstd, int rows, int dim,
                          float eps) const override;
  void do_rmsnorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* rstd, void* dx,
                           void* dgamma, int rows, int dim, bool accumulate) const override;
  void do_gelu_forward(Dtype type, const void* x, void* y, long n) const override;
  void do_gelu_backward(Dtype type, const void* dy, const void* x, void* dx, long n) const override;
  void do_swiglu_forward(Dtype type, const void* gate, const void* up, void* y, long n) const override;
  void do_swiglu_backward(Dtype type, const void* dy, const void* gate, const void* up, void* dgate, void* dup,
                          long n) const override;
  void do_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out, void* probs,
                            const AttentionShape& shape) const override;
  void do_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* probs,
                             const void* dout, void* dq, void* dk, void* dv, const AttentionShape& shape) const override;
  void do_flash_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out,
                                  float* logsumexp, const AttentionShape& shape) const override;
  void do_flash_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* out,
                                   const float* logsumexp, const void* dout, void* dq, void* dk, void* dv,
                                   const AttentionShape& shape) const override;
  void do_adamw_step(Dtype grad_type, float* params, const void* grads, float* m, float* v, long n, int step,
                     const kernels::AdamWConfig& config) const override;
  void do_sgd_step(Dtype grad_type, float* params, const void* grads, float* momentum_buf, long n,
                   const kernels::SgdConfig& config) const override;

 private:
  // Enqueues (cpu_.*kernel)(args...) with every pointer argument checked and translated.
  template <class Kernel, class... Args>
  void launch(const char* name, Kernel kernel, Args... args) const;
  template <class A>
  A on_stream(const char* name, A arg) const;

  DeviceArena& arena_;
  WorkerStream& stream_;
  CpuKernels cpu_;
};

class StrictDeviceBackend final : public Backend {
 public:
  // Address space of the device arena and of the pinned host arena (backed only as used).
  explicit StrictDeviceBackend(std::size_t device_bytes = std::size_t{8} << 30,
                               std::size_t pinned_bytes = std::size_t{4} << 30);
  ~StrictDeviceBackend() override;

  std::string_view name() const override { return "cpu-strict"; }
  const KernelTable& kernels() const override { return kernels_; }
  const KernelTable& host_kernels() const override { return host_kernels_; }
  Allocator& device_allocator() override { return *device_memory_; }
  std::unique_ptr<Allocator> make_device_allocator(std::int64_t capacity_bytes) const override;
  // Pinned host memory: page-aligned blocks of the pinned arena.
  std::unique_ptr<Allocator> make_host_allocator() const override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) override;
  void synchronize() override;
  void end_timed_op() override { synchronize(); }
  bool host_can_access_device() const override { return false; }
  bool host_must_stage(const void* p) const override { return is_device_memory(p); }
  // The world's collectives with device buffers staged through host copies.
  std::unique_ptr<Communicator> device_communicator(Communicator& world) override;

  // Enqueues a copy into pinned host memory (from make_host_allocator) and returns at once;
  // the host may read host_dst only after synchronize() (cudaMemcpyAsync's rule).
  void copy_to_host_async(void* pinned_dst, const void* device_src, std::size_t bytes);

  bool is_device_memory(const void* p) const { return device_arena_->contains(p); }

 private:
  void* device_side(const void* p, const char* what) const;

  // arenas first: the stream and the allocators use them
  std::unique_ptr<DeviceArena> device_arena_;
  std::unique_ptr<DeviceArena> pinned_arena_;
  std::unique_ptr<WorkerStream> stream_;
  StrictKernels kernels_;
  CpuKernels host_kernels_;
  std::unique_ptr<Allocator> device_memory_;
};

}  // namespace twinsim::exec
