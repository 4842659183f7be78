#pragma once
// The kernel table (exec/runtime/kernel_table.hpp) on a GPU: each call launches the
// kernels/cuda kernel of the same name on the backend's stream, device pointers in and out.
//
// Element types: GEMMs and linears run in their storage type on cuBLAS with fp32
// accumulation (kernels/cuda/gemm.hpp); residual and embedding kernels are written for
// every storage type; the other kernels are fp32, and a bf16/fp16 call runs them between a
// widen and a narrow (kernels/cuda/cast.hpp) on stream-ordered scratch: each input converted
// to float, one rounding per stored output, the rule the CPU kernels follow. Correct first;
// native 16-bit versions of those kernels are a speed-up, not a change of results.
#include <cuda_runtime_api.h>

#include "exec/runtime/kernel_table.hpp"

namespace twinsim::exec {

class CudaKernels final : public KernelTable {
 public:
  explicit CudaKernels(cudaStream_t stream) : stream_(stream) {}

  void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                  const KvCacheAttentionShape& shape) const override;
  // cuBLAS keeps its own workspace (outside the tracked allocator, in device_memory_info()).
  std::size_t gemm_workspace_floats() const override { return 0; }
  void set_gemm_workspace(float*) const override {}

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
  cudaStream_t stream_;
};

}  // namespace twinsim::exec
