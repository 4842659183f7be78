#include "exec/cpu/cpu_kernels.hpp"

#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/vocab_embedding.hpp"
#include "kernels/cpu/flash_attention.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/kv_cache_attention.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/optimizer.hpp"
#include "kernels/cpu/residual.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/vocab_parallel_loss.hpp"

namespace twinsim::exec {

namespace cpu = twinsim::kernels::cpu;

namespace {
// The typed pointer of a type-erased argument, for the kernel call of type T.
template <class T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}
template <class T>
T* out(void* p) {
  return static_cast<T*>(p);
}
}  // namespace

void CpuKernels::do_gemm_forward(GemmTypes types, const void* a, const void* b, void* c, int m, int n, int k,
                                 bool trans_a, bool trans_b, float alpha, float beta) const {
  with_storage(types.a, [&]<class TA>() {
    with_storage(types.b, [&]<class TB>() {
      with_storage(types.c, [&]<class TC>() {
        cpu::gemm_forward(in<TA>(a), in<TB>(b), out<TC>(c), m, n, k, trans_a, trans_b, alpha, beta);
      });
    });
  });
}

void CpuKernels::do_linear_forward(Dtype type, const void* x, const void* weight, const void* bias, void* y,
                                   int tokens, int in_features, int out_features) const {
  with_storage(type, [&]<class T>() {
    cpu::linear_forward(in<T>(x), in<T>(weight), in<T>(bias), out<T>(y), tokens, in_features, out_features);
  });
}

void CpuKernels::do_linear_backward_input(Dtype type, const void* dy, const void* weight, void* dx, int tokens,
                                          int in_features, int out_features) const {
  with_storage(type, [&]<class T>() {
    cpu::linear_backward_input(in<T>(dy), in<T>(weight), out<T>(dx), tokens, in_features, out_features);
  });
}

void CpuKernels::do_linear_backward_weight(Dtype type, const void* dy, const void* x, void* dweight, int tokens,
                                           int in_features, int out_features, bool accumulate) const {
  with_storage(type, [&]<class T>() {
    cpu::linear_backward_weight(in<T>(dy), in<T>(x), out<T>(dweight), tokens, in_features, out_features, accumulate);
  });
}

void CpuKernels::do_linear_backward_bias(Dtype type, const void* dy, void* dbias, int tokens, int out_features,
                                         bool accumulate) const {
  with_storage(type, [&]<class T>() {
    cpu::linear_backward_bias(in<T>(dy), out<T>(dbias), tokens, out_features, accumulate);
  });
}

void CpuKernels::do_residual_forward(Dtype type, const void* x, const void* branch, const void* bias, void* y,
                                     int rows, int cols) const {
  with_storage(type, [&]<class T>() {
    cpu::residual_forward(in<T>(x), in<T>(branch), in<T>(bias), out<T>(y), rows, cols);
  });
}

void CpuKernels::do_residual_backward(Dtype type, const void* dy, void* dbias, int rows, int cols,
                                      bool accumulate) const {
  with_storage(type, [&]<class T>() { cpu::residual_backward(in<T>(dy), out<T>(dbias), rows, cols, accumulate); });
}

void CpuKernels::do_vocab_embedding_forward(Dtype type, const int* tokens, const void* table, void* o, int count, int dim,
                                      int row_start, int rows) const {
  with_storage(type, [&]<class T>() { cpu::vocab_embedding_forward(tokens, in<T>(table), out<T>(o), count, dim, row_start, rows); });
}

void CpuKernels::do_vocab_embedding_backward(Dtype type, const int* tokens, const void* dout, void* dtable, int count,
                                       int dim, int row_start, int rows) const {
  with_storage(type, [&]<class T>() {
    cpu::vocab_embedding_backward(tokens, in<T>(dout), out<T>(dtable), count, dim, row_start, rows);
  });
}

void CpuKernels::do_vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const {
  cpu::vocab_parallel_row_max(logits, row_max, tokens, local_vocab);
}

void CpuKernels::do_vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums,
                                            int tokens, int local_vocab, int vocab_start) const {
  cpu::vocab_parallel_row_sums(logits, targets, row_max, sums, tokens, local_vocab, vocab_start);
}

void CpuKernels::do_vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss,
                                        int tokens) const {
  cpu::vocab_parallel_loss(row_max, sums, lse, token_loss, tokens);
}

void CpuKernels::do_vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse,
                                                 float dloss, float* dlogits, int tokens, int local_vocab,
                                                 int vocab_start) const {
  cpu::vocab_parallel_loss_backward(logits, targets, lse, dloss, dlogits, tokens, local_vocab, vocab_start);
}

void CpuKernels::do_rope(Dtype type, bool backward, const void* x, void* y, int batch, int seq, int heads,
                         int head_dim, float theta, int pos_offset) const {
  with_storage(type, [&]<class T>() {
    if (backward) cpu::rope_backward(in<T>(x), out<T>(y), batch, seq, heads, head_dim, theta, pos_offset);
    else cpu::rope_forward(in<T>(x), out<T>(y), batch, seq, heads, head_dim, theta, pos_offset);
  });
}

void CpuKernels::do_layernorm_forward(Dtype type, const void* x, const void* gamma, const void* beta, void* y,
                                      float* mean, float* rstd, int rows, int dim, float eps) const {
  with_storage(type, [&]<class T>() {
    cpu::layernorm_forward(in<T>(x), in<T>(gamma), in<T>(beta), out<T>(y), mean, rstd, rows, dim, eps);
  });
}

void CpuKernels::do_layernorm_backward(Dtype type, const void* dy, const void* x, const void* gamma,
                                       const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta,
                                       int rows, int dim, bool accumulate) const {
  with_storage(type, [&]<class T>() {
    cpu::layernorm_backward(in<T>(dy), in<T>(x), in<T>(gamma), mean, rstd, out<T>(dx), out<T>(dgamma), out<T>(dbeta),
                          rows, dim, accumulate);
  });
}

void CpuKernels::do_rmsnorm_forward(Dtype type, const void* x, const void* gamma, void* y, float* rstd, int rows,
                                    int dim, float eps) const {
  with_storage(type, [&]<class T>() { cpu::rmsnorm_forward(in<T>(x), in<T>(gamma), out<T>(y), rstd, rows, dim, eps); });
}

void CpuKernels::do_rmsnorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* rstd,
                                     void* dx, void* dgamma, int rows, int dim, bool accumulate) const {
  with_storage(type, [&]<class T>() {
    cpu::rmsnorm_backward(in<T>(dy), in<T>(x), in<T>(gamma), rstd, out<T>(dx), out<T>(dgamma), rows, dim, accumulate);
  });
}

void CpuKernels::do_gelu_forward(Dtype type, const void* x, void* y, long n) const {
  with_storage(type, [&]<class T>() { cpu::gelu_forward(in<T>(x), out<T>(y), n); });
}

void CpuKernels::do_gelu_backward(Dtype type, const void* dy, const void* x, void* dx, long n) const {
  with_storage(type, [&]<class T>() { cpu::gelu_backward(in<T>(dy), in<T>(x), out<T>(dx), n); });
}

void CpuKernels::do_swiglu_forward(Dtype type, const void* gate, const void* up, void* y, long n) const {
  with_storage(type, [&]<class T>() { cpu::swiglu_forward(in<T>(gate), in<T>(up), out<T>(y), n); });
}

void CpuKernels::do_swiglu_backward(Dtype type, const void* dy, const void* gate, const void* up, void* dgate,
                                    void* dup, long n) const {
  with_storage(type, [&]<class T>() {
    cpu::swiglu_backward(in<T>(dy), in<T>(gate), in<T>(up), out<T>(dgate), out<T>(dup), n);
  });
}

void CpuKernels::do_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* o, void* probs,
                                      const AttentionShape& shape) const {
  with_storage(type, [&]<class T>() {
    cpu::attention_forward(in<T>(q), in<T>(k), in<T>(v), out<T>(o), out<T>(probs), shape);
  });
}

void CpuKernels::do_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* probs,
                                       const void* dout, void* dq, void* dk, void* dv,
                                       const AttentionShape& shape) const {
  with_storage(type, [&]<class T>() {
    cpu::attention_backward(in<T>(q), in<T>(k), in<T>(v), in<T>(probs), in<T>(dout), out<T>(dq), out<T>(dk),
                          out<T>(dv), shape);
  });
}

void CpuKernels::do_flash_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* o,
                                            float* logsumexp, const AttentionShape& shape) const {
  with_storage(type, [&]<class T>() {
    cpu::flash_attention_forward(in<T>(q), in<T>(k), in<T>(v), out<T>(o), logsumexp, shape);
  });
}

void CpuKernels::do_flash_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* o,
                                             const float* logsumexp, const void* dout, void* dq, void* dk, void* dv,
                                             const AttentionShape& shape) const {
  with_storage(type, [&]<class T>() {
    cpu::flash_attention_backward(in<T>(q), in<T>(k), in<T>(v), in<T>(o), logsumexp, in<T>(dout), out<T>(dq),
                                out<T>(dk), out<T>(dv), shape);
  });
}

void CpuKernels::kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* o,
                                            const KvCacheAttentionShape& shape) const {
  cpu::kv_cache_attention_forward(q, k_cache, v_cache, o, shape);
}

void CpuKernels::do_adamw_step(Dtype grad_type, float* params, const void* grads, float* m, float* v, long n,
                               int step, const kernels::AdamWConfig& config) const {
  with_storage(grad_type, [&]<class G>() { cpu::adamw_step(params, in<G>(grads), m, v, n, step, config); });
}

void CpuKernels::do_sgd_step(Dtype grad_type, float* params, const void* grads, float* momentum_buf, long n,
                             const kernels::SgdConfig& config) const {
  with_storage(grad_type, [&]<class G>() { cpu::sgd_step(params, in<G>(grads), momentum_buf, n, config); });
}

std::size_t CpuKernels::gemm_workspace_floats() const { return cpu::kGemmWorkspaceFloats; }

void CpuKernels::set_gemm_workspace(float* workspace) const { cpu::set_gemm_workspace(workspace); }

}  // namespace twinsim::exec
