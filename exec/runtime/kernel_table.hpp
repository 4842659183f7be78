#pragma once
// The kernels the executor's model calls, one forward/backward pair per op, behind one
// call shape for every backend (llm.c's CPU and CUDA twins): the model calls
// `ctx.kernels().linear_forward(x, w, b, y, ...)` with typed pointers into device memory,
// and the backend (exec/runtime/backend.hpp) runs its own kernel: kernels/cpu on the host,
// on a worker thread for the strict-device backend, kernels/cuda on a GPU.
//
// Pointers are device pointers of the backend that owns the table; each call is enqueued on
// the backend's stream and may still be running when it returns (Backend::synchronize).
// Element types are float, kernels::bf16 or kernels::fp16 (kernels/common/storage.hpp);
// statistics (norm mean/rstd, flash attention's logsumexp) and optimizer states are fp32.
//
// The public calls are templates over the element type forwarding to type-erased virtuals
// (the non-virtual interface idiom, as exec/runtime/communicator.hpp): a backend writes each
// kernel once, switching on Dtype, and the model keeps its typed pointers. Semantics of each
// pair are those of the kernels/cpu header of the same name.
#include <string_view>
#include <type_traits>

#include "exec/runtime/storage_dtype.hpp"
#include "kernels/common/attention_shape.hpp"
#include "kernels/common/gemm_backward.hpp"
#include "kernels/common/kv_cache_shape.hpp"
#include "kernels/common/optimizer_math.hpp"

namespace twinsim::exec {

using kernels::AttentionShape;
using kernels::KvCacheAttentionShape;

// Sees every kernel call of a table it observes, inside the op (ModelContext::op) that made it:
// the recording of a step that a test lines up with the simulator's op list
// (tests/unit/backend/recorded_ops_test.cpp). flops counts multiply-adds as 2 (GEMMs only).
class KernelObserver {
 public:
  virtual ~KernelObserver() = default;
  virtual void on_op_begin(std::string_view op) = 0;
  virtual void on_op_end() = 0;
  virtual void on_kernel(std::string_view kernel, double flops) = 0;
};

class KernelTable {
 public:
  virtual ~KernelTable() = default;

  // Records every call from now on (nullptr: none). Costs one branch per call.
  void set_observer(KernelObserver* observer) const { observer_ = observer; }
  KernelObserver* observer() const { return observer_; }

  // ---- GEMM: C = alpha op(A) op(B) + beta C, A [m, k], B [k, n], C [m, n] (row-major)
  template <class TA, class TB, class TC>
  void gemm_forward(const TA* a, const TB* b, TC* c, int m, int n, int k, bool trans_a, bool trans_b,
                    float alpha = 1.0f, float beta = 0.0f) const {
    note("gemm_forward", 2.0 * static_cast<double>(m) * n * k);
    do_gemm_forward({storage_dtype<TA>(), storage_dtype<TB>(), storage_dtype<TC>()}, a, b, c, m, n, k, trans_a,
                    trans_b, alpha, beta);
  }
  // Its backward as two forward GEMMs (kernels/common/gemm_backward.hpp, the one home of
  // the decomposition); da / db may be null.
  template <class T>
  void gemm_backward(const T* a, const T* b, const T* dc, T* da, T* db, int m, int n, int k, bool trans_a,
                     bool trans_b, bool accumulate = false) const {
    const auto forward = [this](const T* x, const T* y, T* z, int rows, int cols, int inner, bool tx, bool ty,
                                float alpha, float beta) { gemm_forward(x, y, z, rows, cols, inner, tx, ty, alpha, beta); };
    kernels::gemm_backward_via(forward, a, b, dc, da, db, m, n, k, trans_a, trans_b, accumulate);
  }

  // ---- linear: y [tokens, out] = x [tokens, in] W^T (+ bias), W [out, in]
  template <class T>
  void linear_forward(const T* x, const T* weight, const std::type_identity_t<T>* bias, T* y, int tokens, int in,
                      int out) const {
    note("linear_forward", 2.0 * static_cast<double>(tokens) * in * out);
    do_linear_forward(storage_dtype<T>(), x, weight, bias, y, tokens, in, out);
  }
  template <class T>
  void linear_backward_input(const T* dy, const T* weight, T* dx, int tokens, int in, int out) const {
    note("linear_backward_input", 2.0 * static_cast<double>(tokens) * in * out);
    do_linear_backward_input(storage_dtype<T>(), dy, weight, dx, tokens, in, out);
  }
  template <class T>
  void linear_backward_weight(const T* dy, const T* x, T* dweight, int tokens, int in, int out, bool accumulate) const {
    note("linear_backward_weight", 2.0 * static_cast<double>(tokens) * in * out);
    do_linear_backward_weight(storage_dtype<T>(), dy, x, dweight, tokens, in, out, accumulate);
  }
  template <class T>
  void linear_backward_bias(const T* dy, std::type_identity_t<T>* dbias, int tokens, int out, bool accumulate) const {
    note("linear_backward_bias");
    do_linear_backward_bias(storage_dtype<T>(), dy, dbias, tokens, out, accumulate);
  }

  // ---- residual: y = x + branch (+ bias broadcast over rows)
  template <class T>
  void residual_forward(const T* x, const T* branch, const std::type_identity_t<T>* bias, T* y, int rows,
                        int cols) const {
    note("residual_forward");
    do_residual_forward(storage_dtype<T>(), x, branch, bias, y, rows, cols);
  }
  template <class T>
  void residual_backward(const T* dy, T* dbias, int rows, int cols, bool accumulate) const {
    note("residual_backward");
    do_residual_backward(storage_dtype<T>(), dy, dbias, rows, cols, accumulate);
  }

  // ---- embedding lookup of a vocabulary shard (kernels/cpu/vocab_embedding.hpp); tokens are
  // device ints [count], rows outside [row_start, row_start + rows) give zeros
  template <class T>
  void vocab_embedding_forward(const int* tokens, const T* table, T* out, int count, int dim, int row_start,
                         int rows) const {
    note("vocab_embedding_forward");
    do_vocab_embedding_forward(storage_dtype<T>(), tokens, table, out, count, dim, row_start, rows);
  }
  template <class T>
  void vocab_embedding_backward(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start,
                          int rows) const {
    note("vocab_embedding_backward");
    do_vocab_embedding_backward(storage_dtype<T>(), tokens, dout, dtable, count, dim, row_start, rows);
  }

  // ---- vocabulary-parallel softmax cross-entropy (kernels/cpu/vocab_parallel_loss.hpp): fp32
  // logits [tokens, local_vocab] of the shard starting at vocab_start, device int targets; the
  // caller all-reduces row_max (max) and sums [2 * tokens] (sum) over the TP group between stages
  void vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const {
    note("vocab_parallel_row_max");
    do_vocab_parallel_row_max(logits, row_max, tokens, local_vocab);
  }
  void vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums, int tokens,
                               int local_vocab, int vocab_start) const {
    note("vocab_parallel_row_sums");
    do_vocab_parallel_row_sums(logits, targets, row_max, sums, tokens, local_vocab, vocab_start);
  }
  void vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens) const {
    note("vocab_parallel_loss");
    do_vocab_parallel_loss(row_max, sums, lse, token_loss, tokens);
  }
  void vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                    float* dlogits, int tokens, int local_vocab, int vocab_start) const {
    note("vocab_parallel_loss_backward");
    do_vocab_parallel_loss_backward(logits, targets, lse, dloss, dlogits, tokens, local_vocab, vocab_start);
  }

  // ---- rotary position embedding
  template <class T>
  void rope_forward(const T* x, T* y, int batch, int seq, int heads, int head_dim, float theta,
                    int pos_offset = 0) const {
    note("rope_forward");
    do_rope(storage_dtype<T>(), false, x, y, batch, seq, heads, head_dim, theta, pos_offset);
  }
  template <class T>
  void rope_backward(const T* dy, T* dx, int batch, int seq, int heads, int head_dim, float theta,
                     int pos_offset = 0) const {
    note("rope_backward");
    do_rope(storage_dtype<T>(), true, dy, dx, batch, seq, heads, head_dim, theta, pos_offset);
  }

  // ---- norms (per-row statistics in fp32)
  template <class T>
  void layernorm_forward(const T* x, const T* gamma, const std::type_identity_t<T>* beta, T* y, float* mean,
                         float* rstd, int rows, int dim, float eps) const {
    note("layernorm_forward");
    do_layernorm_forward(storage_dtype<T>(), x, gamma, beta, y, mean, rstd, rows, dim, eps);
  }
  template <class T>
  void layernorm_backward(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                          T* dgamma, std::type_identity_t<T>* dbeta, int rows, int dim, bool accumulate) const {
    note("layernorm_backward");
    do_layernorm_backward(storage_dtype<T>(), dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, dim, accumulate);
  }
  template <class T>
  void rmsnorm_forward(const T* x, const T* gamma, T* y, float* rstd, int rows, int dim, float eps) const {
    note("rmsnorm_forward");
    do_rmsnorm_forward(storage_dtype<T>(), x, gamma, y, rstd, rows, dim, eps);
  }
  template <class T>
  void rmsnorm_backward(const T* dy, const T* x, const T* gamma, const float* rstd, T* dx, T* dgamma, int rows,
                        int dim, bool accumulate) const {
    note("rmsnorm_backward");
    do_rmsnorm_backward(storage_dtype<T>(), dy, x, gamma, rstd, dx, dgamma, rows, dim, accumulate);
  }

  // ---- activations over n elements
  template <class T>
  void gelu_forward(const T* x, T* y, long n) const {
    note("gelu_forward");
    do_gelu_forward(storage_dtype<T>(), x, y, n);
  }
  template <class T>
  void gelu_backward(const T* dy, const T* x, T* dx, long n) const {
    note("gelu_backward");
    do_gelu_backward(storage_dtype<T>(), dy, x, dx, n);
  }
  template <class T>
  void swiglu_forward(const T* gate, const T* up, T* y, long n) const {
    note("swiglu_forward");
    do_swiglu_forward(storage_dtype<T>(), gate, up, y, n);
  }
  template <class T>
  void swiglu_backward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, long n) const {
    note("swiglu_backward");
    do_swiglu_backward(storage_dtype<T>(), dy, gate, up, dgate, dup, n);
  }

  // ---- attention: the materialised one (probs saved) and the flash one (logsumexp saved)
  template <class T>
  void attention_forward(const T* q, const T* k, const T* v, T* out, T* probs, const AttentionShape& shape) const {
    note("attention_forward");
    do_attention_forward(storage_dtype<T>(), q, k, v, out, probs, shape);
  }
  template <class T>
  void attention_backward(const T* q, const T* k, const T* v, const T* probs, const T* dout, T* dq, T* dk, T* dv,
                          const AttentionShape& shape) const {
    note("attention_backward");
    do_attention_backward(storage_dtype<T>(), q, k, v, probs, dout, dq, dk, dv, shape);
  }
  template <class T>
  void flash_attention_forward(const T* q, const T* k, const T* v, T* out, float* logsumexp,
                               const AttentionShape& shape) const {
    note("flash_attention_forward");
    do_flash_attention_forward(storage_dtype<T>(), q, k, v, out, logsumexp, shape);
  }
  template <class T>
  void flash_attention_backward(const T* q, const T* k, const T* v, const T* out, const float* logsumexp,
                                const T* dout, T* dq, T* dk, T* dv, const AttentionShape& shape) const {
    note("flash_attention_backward");
    do_flash_attention_backward(storage_dtype<T>(), q, k, v, out, logsumexp, dout, dq, dk, dv, shape);
  }
  // A serving pass's attention over the KV cache (fp32; forward only).
  virtual void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                          const KvCacheAttentionShape& shape) const = 0;

  // ---- optimizer steps: fp32 params and states, gradients stored as G
  template <class G>
  void adamw_step(float* params, const G* grads, float* m, float* v, long n, int step,
                  const kernels::AdamWConfig& config) const {
    note("adamw_step");
    do_adamw_step(storage_dtype<G>(), params, grads, m, v, n, step, config);
  }
  template <class G>
  void sgd_step(float* params, const G* grads, float* momentum_buf, long n, const kernels::SgdConfig& config) const {
    note("sgd_step");
    do_sgd_step(storage_dtype<G>(), params, grads, momentum_buf, n, config);
  }

  // The GEMM's scratch space (floats), drawn by the caller from the tracked allocator so the
  // report counts it; 0 when the backend's GEMM needs none. set_gemm_workspace(nullptr)
  // gives the kernels back their own.
  virtual std::size_t gemm_workspace_floats() const = 0;
  virtual void set_gemm_workspace(float* workspace) const = 0;

 protected:
  void note(std::string_view kernel, double flops = 0) const {
    if (observer_) observer_->on_kernel(kernel, flops);
  }
  struct GemmTypes {
    Dtype a, b, c;
  };
  virtual void do_gemm_forward(GemmTypes types, const void* a, const void* b, void* c, int m, int n, int k,
                               bool trans_a, bool trans_b, float alpha, float beta) const = 0;
  virtual void do_linear_forward(Dtype type, const void* x, const void* weight, const void* bias, void* y,
                                 int tokens, int in, int out) const = 0;
  virtual void do_linear_backward_input(Dtype type, const void* dy, const void* weight, void* dx, int tokens, int in,
                                        int out) const = 0;
  virtual void do_linear_backward_weight(Dtype type, const void* dy, const void* x, void* dweight, int tokens, int in,
                                         int out, bool accumulate) const = 0;
  virtual void do_linear_backward_bias(Dtype type, const void* dy, void* dbias, int tokens, int out,
                                       bool accumulate) const = 0;
  virtual void do_residual_forward(Dtype type, const void* x, const void* branch, const void* bias, void* y, int rows,
                                   int cols) const = 0;
  virtual void do_residual_backward(Dtype type, const void* dy, void* dbias, int rows, int cols,
                                    bool accumulate) const = 0;
  virtual void do_vocab_embedding_forward(Dtype type, const int* tokens, const void* table, void* out, int count, int dim,
                                    int row_start, int rows) const = 0;
  virtual void do_vocab_embedding_backward(Dtype type, const int* tokens, const void* dout, void* dtable, int count,
                                     int dim, int row_start, int rows) const = 0;
  virtual void do_vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const = 0;
  virtual void do_vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums,
                                          int tokens, int local_vocab, int vocab_start) const = 0;
  virtual void do_vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss,
                                      int tokens) const = 0;
  virtual void do_vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                               float* dlogits, int tokens, int local_vocab, int vocab_start) const = 0;
  // backward: the inverse rotation (dy -> dx)
  virtual void do_rope(Dtype type, bool backward, const void* x, void* y, int batch, int seq, int heads,
                       int head_dim, float theta, int pos_offset) const = 0;
  virtual void do_layernorm_forward(Dtype type, const void* x, const void* gamma, const void* beta, void* y,
                                    float* mean, float* rstd, int rows, int dim, float eps) const = 0;
  virtual void do_layernorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* mean,
                                     const float* rstd, void* dx, void* dgamma, void* dbeta, int rows, int dim,
                                     bool accumulate) const = 0;
  virtual void do_rmsnorm_forward(Dtype type, const void* x, const void* gamma, void* y, float* rstd, int rows,
                                  int dim, float eps) const = 0;
  virtual void do_rmsnorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* rstd,
                                   void* dx, void* dgamma, int rows, int dim, bool accumulate) const = 0;
  virtual void do_gelu_forward(Dtype type, const void* x, void* y, long n) const = 0;
  virtual void do_gelu_backward(Dtype type, const void* dy, const void* x, void* dx, long n) const = 0;
  virtual void do_swiglu_forward(Dtype type, const void* gate, const void* up, void* y, long n) const = 0;
  virtual void do_swiglu_backward(Dtype type, const void* dy, const void* gate, const void* up, void* dgate,
                                  void* dup, long n) const = 0;
  virtual void do_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out, void* probs,
                                    const AttentionShape& shape) const = 0;
  virtual void do_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* probs,
                                     const void* dout, void* dq, void* dk, void* dv,
                                     const AttentionShape& shape) const = 0;
  virtual void do_flash_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out,
                                          float* logsumexp, const AttentionShape& shape) const = 0;
  virtual void do_flash_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* out,
                                           const float* logsumexp, const void* dout, void* dq, void* dk, void* dv,
                                           const AttentionShape& shape) const = 0;
  virtual void do_adamw_step(Dtype grad_type, float* params, const void* grads, float* m, float* v, long n, int step,
                             const kernels::AdamWConfig& config) const = 0;
  virtual void do_sgd_step(Dtype grad_type, float* params, const void* grads, float* momentum_buf, long n,
                           const kernels::SgdConfig& config) const = 0;

 private:
  mutable KernelObserver* observer_ = nullptr;
};

}  // namespace twinsim::exec
