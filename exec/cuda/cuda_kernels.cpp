#include "exec/cuda/cuda_kernels.hpp"

#include "kernels/cuda/activation.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/cast.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/vocab_embedding.hpp"
#include "kernels/cuda/flash_attention.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/linear.hpp"
#include "kernels/cuda/norm.hpp"
#include "kernels/cuda/optimizer.hpp"
#include "kernels/cuda/residual.hpp"
#include "kernels/cuda/rope.hpp"
#include "kernels/cuda/vocab_parallel_loss.hpp"

namespace twinsim::exec {

namespace gpu = twinsim::kernels::cuda;

namespace {

// The fp32 face of a device tensor for an fp32 kernel: the tensor itself when it is fp32
// (or absent), else a float copy on the stream-ordered pool (cudaMallocAsync, freed in
// stream order). An input is widened at once; an output starts widened only when the
// kernel adds to it (accumulate), and store() rounds it back into the tensor.
class Fp32View {
 public:
  Fp32View(Dtype type, const void* tensor, long count, bool load) : type_(type), tensor_(const_cast<void*>(tensor)), count_(count) {
    if (tensor == nullptr || type == Dtype::fp32) {
      data_ = static_cast<float*>(tensor_);
      return;
    }
    CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data_), count * sizeof(float), gpu::current_stream()));
    owned_ = true;
    if (!load) return;
    if (type == Dtype::bf16) gpu::widen(static_cast<const kernels::bf16*>(tensor), data_, count);
    else gpu::widen(static_cast<const kernels::fp16*>(tensor), data_, count);
  }
  ~Fp32View() {
    if (owned_) cudaFreeAsync(data_, gpu::current_stream());  // in a destructor: nothing to report to
  }
  Fp32View(const Fp32View&) = delete;
  Fp32View& operator=(const Fp32View&) = delete;

  operator float*() const { return data_; }
  void store() const {
    if (!owned_) return;
    if (type_ == Dtype::bf16) gpu::narrow(data_, static_cast<kernels::bf16*>(tensor_), count_);
    else gpu::narrow(data_, static_cast<kernels::fp16*>(tensor_), count_);
  }

 private:
  Dtype type_;
  void* tensor_;
  long count_;
  float* data_ = nullptr;
  bool owned_ = false;
};

Fp32View input(Dtype type, const void* tensor, long count) { return Fp32View(type, tensor, count, true); }
Fp32View output(Dtype type, void* tensor, long count, bool accumulate = false) {
  return Fp32View(type, tensor, count, accumulate);
}

gpu::GemmType gemm_type(Dtype type) {
  if (type == Dtype::bf16) return gpu::GemmType::bf16;
  if (type == Dtype::fp16) return gpu::GemmType::fp16;
  return gpu::GemmType::fp32;
}

long elements(const AttentionShape& s, long row_width) { return static_cast<long>(s.batch) * s.seq * row_width; }
long probs_elements(const AttentionShape& s) { return static_cast<long>(s.batch) * s.heads * s.seq * s.seq; }

}  // namespace

// cuBLAS takes A and B of one type and C of the same or fp32 (gemm_forward_mixed); any other
// mix runs in fp32 on widened copies.
void CudaKernels::do_gemm_forward(GemmTypes types, const void* a, const void* b, void* c, int m, int n, int k,
                                  bool trans_a, bool trans_b, float alpha, float beta) const {
  gpu::StreamScope on(stream_);
  if (types.a == types.b && (types.c == types.a || types.c == Dtype::fp32)) {
    gpu::gemm_forward_mixed(gemm_type(types.a), gemm_type(types.c), a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
    return;
  }
  const Fp32View a32 = input(types.a, a, static_cast<long>(m) * k), b32 = input(types.b, b, static_cast<long>(k) * n);
  const Fp32View c32 = output(types.c, c, static_cast<long>(m) * n, beta != 0.0f);
  gpu::gemm_forward(a32, b32, c32, m, n, k, trans_a, trans_b, alpha, beta);
  c32.store();
}

// y = x W^T (+ b): the GEMM's fp32 sum, the bias added in fp32, one rounding.
void CudaKernels::do_linear_forward(Dtype type, const void* x, const void* weight, const void* bias, void* y,
                                    int tokens, int in, int out) const {
  gpu::StreamScope on(stream_);
  if (bias == nullptr) {
    gpu::gemm_forward_typed(gemm_type(type), x, weight, y, tokens, out, in, false, true);
    return;
  }
  const Fp32View y32 = output(type, y, static_cast<long>(tokens) * out), b32 = input(type, bias, out);
  gpu::gemm_forward_mixed(gemm_type(type), gpu::GemmType::fp32, x, weight, static_cast<float*>(y32), tokens, out, in,
                          false, true);
  gpu::add_bias(y32, b32, tokens, out);
  y32.store();
}

void CudaKernels::do_linear_backward_input(Dtype type, const void* dy, const void* weight, void* dx, int tokens,
                                           int in, int out) const {
  gpu::StreamScope on(stream_);
  gpu::gemm_forward_typed(gemm_type(type), dy, weight, dx, tokens, in, out, false, false);  // dx = dy W
}

void CudaKernels::do_linear_backward_weight(Dtype type, const void* dy, const void* x, void* dweight, int tokens,
                                            int in, int out, bool accumulate) const {
  gpu::StreamScope on(stream_);
  gpu::gemm_forward_typed(gemm_type(type), dy, x, dweight, out, in, tokens, true, false, 1.0f,
                          accumulate ? 1.0f : 0.0f);  // dW (+)= dy^T x
}

void CudaKernels::do_linear_backward_bias(Dtype type, const void* dy, void* dbias, int tokens, int out,
                                          bool accumulate) const {
  gpu::StreamScope on(stream_);
  const Fp32View dy32 = input(type, dy, static_cast<long>(tokens) * out), db32 = output(type, dbias, out, accumulate);
  gpu::column_sum(dy32, db32, tokens, out, accumulate);
  db32.store();
}

void CudaKernels::do_residual_forward(Dtype type, const void* x, const void* branch, const void* bias, void* y,
                                      int rows, int cols) const {
  gpu::StreamScope on(stream_);
  with_storage(type, [&]<class T>() {
    gpu::residual_forward(static_cast<const T*>(x), static_cast<const T*>(branch), static_cast<const T*>(bias),
                          static_cast<T*>(y), rows, cols);
  });
}

void CudaKernels::do_residual_backward(Dtype type, const void* dy, void* dbias, int rows, int cols,
                                       bool accumulate) const {
  if (dbias == nullptr) return;
  do_linear_backward_bias(type, dy, dbias, rows, cols, accumulate);  // the same column sum
}

void CudaKernels::do_vocab_embedding_forward(Dtype type, const int* tokens, const void* table, void* out, int count,
                                       int dim, int row_start, int rows) const {
  gpu::StreamScope on(stream_);
  with_storage(type, [&]<class T>() {
    gpu::vocab_embedding_forward(tokens, static_cast<const T*>(table), static_cast<T*>(out), count, dim, row_start, rows);
  });
}

void CudaKernels::do_vocab_embedding_backward(Dtype type, const int* tokens, const void* dout, void* dtable, int count,
                                        int dim, int row_start, int rows) const {
  gpu::StreamScope on(stream_);
  with_storage(type, [&]<class T>() {
    gpu::vocab_embedding_backward(tokens, static_cast<const T*>(dout), static_cast<T*>(dtable), count, dim, row_start,
                            rows);
  });
}

void CudaKernels::do_vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const {
  gpu::StreamScope on(stream_);
  gpu::vocab_parallel_row_max(logits, row_max, tokens, local_vocab);
}

void CudaKernels::do_vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max,
                                             float* sums, int tokens, int local_vocab, int vocab_start) const {
  gpu::StreamScope on(stream_);
  gpu::vocab_parallel_row_sums(logits, targets, row_max, sums, tokens, local_vocab, vocab_start);
}

void CudaKernels::do_vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss,
                                         int tokens) const {
  gpu::StreamScope on(stream_);
  gpu::vocab_parallel_loss(row_max, sums, lse, token_loss, tokens);
}

void CudaKernels::do_vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse,
                                                  float dloss, float* dlogits, int tokens, int local_vocab,
                                                  int vocab_start) const {
  gpu::StreamScope on(stream_);
  gpu::vocab_parallel_loss_backward(logits, targets, lse, dloss, dlogits, tokens, local_vocab, vocab_start);
}

void CudaKernels::do_rope(Dtype type, bool backward, const void* x, void* y, int batch, int seq, int heads,
                          int head_dim, float theta, int pos_offset) const {
  gpu::StreamScope on(stream_);
  const long n = static_cast<long>(batch) * seq * heads * head_dim;
  const Fp32View x32 = input(type, x, n), y32 = output(type, y, n);
  if (backward) gpu::rope_backward(x32, y32, batch, seq, heads, head_dim, theta, pos_offset);
  else gpu::rope_forward(x32, y32, batch, seq, heads, head_dim, theta, pos_offset);
  y32.store();
}

void CudaKernels::do_layernorm_forward(Dtype type, const void* x, const void* gamma, const void* beta, void* y,
                                       float* mean, float* rstd, int rows, int dim, float eps) const {
  gpu::StreamScope on(stream_);
  const long n = static_cast<long>(rows) * dim;
  const Fp32View x32 = input(type, x, n), g32 = input(type, gamma, dim), b32 = input(type, beta, dim);
  const Fp32View y32 = output(type, y, n);
  gpu::layernorm_forward(x32, g32, b32, y32, mean, rstd, rows, dim, eps);
  y32.store();
}

void CudaKernels::do_layernorm_backward(Dtype type, const void* dy, const void* x, const void* gamma,
                                        const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta,
                                        int rows, int dim, bool accumulate) const {
  gpu::StreamScope on(stream_);
  const long n = static_cast<long>(rows) * dim;
  const Fp32View dy32 = input(type, dy, n), x32 = input(type, x, n), g32 = input(type, gamma, dim);
  const Fp32View dx32 = output(type, dx, n), dg32 = output(type, dgamma, dim, accumulate);
  const Fp32View db32 = output(type, dbeta, dim, accumulate);
  gpu::layernorm_backward(dy32, x32, g32, mean, rstd, dx32, dg32, db32, rows, dim, accumulate);
  dx32.store();
  dg32.store();
  db32.store();
}

void CudaKernels::do_rmsnorm_forward(Dtype type, const void* x, const void* gamma, void* y, float* rstd, int rows,
                                     int dim, float eps) const {
  gpu::StreamScope on(stream_);
  const long n = static_cast<long>(rows) * dim;
  const Fp32View x32 = input(type, x, n), g32 = input(type, gamma, dim), y32 = output(type, y, n);
  gpu::rmsnorm_forward(x32, g32, y32, rstd, rows, dim, eps);
  y32.store();
}

void CudaKernels::do_rmsnorm_backward(Dtype type, const void* dy, const void* x, const void* gamma, const float* rstd,
                                      void* dx, void* dgamma, int rows, int dim, bool accumulate) const {
  gpu::StreamScope on(stream_);
  const long n = static_cast<long>(rows) * dim;
  const Fp32View dy32 = input(type, dy, n), x32 = input(type, x, n), g32 = input(type, gamma, dim);
  const Fp32View dx32 = output(type, dx, n), dg32 = output(type, dgamma, dim, accumulate);
  gpu::rmsnorm_backward(dy32, x32, g32, rstd, dx32, dg32, rows, dim, accumulate);
  dx32.store();
  dg32.store();
}

void CudaKernels::do_gelu_forward(Dtype type, const void* x, void* y, long n) const {
  gpu::StreamScope on(stream_);
  const Fp32View x32 = input(type, x, n), y32 = output(type, y, n);
  gpu::gelu_forward(x32, y32, n);
  y32.store();
}

void CudaKernels::do_gelu_backward(Dtype type, const void* dy, const void* x, void* dx, long n) const {
  gpu::StreamScope on(stream_);
  const Fp32View dy32 = input(type, dy, n), x32 = input(type, x, n), dx32 = output(type, dx, n);
  gpu::gelu_backward(dy32, x32, dx32, n);
  dx32.store();
}

void CudaKernels::do_swiglu_forward(Dtype type, const void* gate, const void* up, void* y, long n) const {
  gpu::StreamScope on(stream_);
  const Fp32View g32 = input(type, gate, n), u32 = input(type, up, n), y32 = output(type, y, n);
  gpu::swiglu_forward(g32, u32, y32, n);
  y32.store();
}

void CudaKernels::do_swiglu_backward(Dtype type, const void* dy, const void* gate, const void* up, void* dgate,
                                     void* dup, long n) const {
  gpu::StreamScope on(stream_);
  const Fp32View dy32 = input(type, dy, n), g32 = input(type, gate, n), u32 = input(type, up, n);
  const Fp32View dg32 = output(type, dgate, n), du32 = output(type, dup, n);
  gpu::swiglu_backward(dy32, g32, u32, dg32, du32, n);
  dg32.store();
  du32.store();
}

void CudaKernels::do_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* o, void* probs,
                                       const AttentionShape& s) const {
  gpu::StreamScope on(stream_);
  const Fp32View q32 = input(type, q, elements(s, s.q_row_stride())), k32 = input(type, k, elements(s, s.kv_row_stride()));
  const Fp32View v32 = input(type, v, elements(s, s.v_row_stride()));
  const Fp32View o32 = output(type, o, elements(s, s.out_row_stride())), p32 = output(type, probs, probs_elements(s));
  gpu::attention_forward(q32, k32, v32, o32, p32, s);
  o32.store();
  p32.store();
}

void CudaKernels::do_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* probs,
                                        const void* dout, void* dq, void* dk, void* dv,
                                        const AttentionShape& s) const {
  gpu::StreamScope on(stream_);
  const long nq = elements(s, s.q_row_stride()), nk = elements(s, s.kv_row_stride());
  const long nv = elements(s, s.v_row_stride()), no = elements(s, s.out_row_stride());
  const Fp32View q32 = input(type, q, nq), k32 = input(type, k, nk), v32 = input(type, v, nv);
  const Fp32View p32 = input(type, probs, probs_elements(s)), do32 = input(type, dout, no);
  const Fp32View dq32 = output(type, dq, nq), dk32 = output(type, dk, nk), dv32 = output(type, dv, nv);
  gpu::attention_backward(q32, k32, v32, p32, do32, dq32, dk32, dv32, s);
  dq32.store();
  dk32.store();
  dv32.store();
}

void CudaKernels::do_flash_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* o,
                                             float* logsumexp, const AttentionShape& s) const {
  gpu::StreamScope on(stream_);
  const Fp32View q32 = input(type, q, elements(s, s.q_row_stride())), k32 = input(type, k, elements(s, s.kv_row_stride()));
  const Fp32View v32 = input(type, v, elements(s, s.v_row_stride())), o32 = output(type, o, elements(s, s.out_row_stride()));
  gpu::flash_attention_forward(q32, k32, v32, o32, logsumexp, s);
  o32.store();
}

void CudaKernels::do_flash_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* o,
                                              const float* logsumexp, const void* dout, void* dq, void* dk, void* dv,
                                              const AttentionShape& s) const {
  gpu::StreamScope on(stream_);
  const long nq = elements(s, s.q_row_stride()), nk = elements(s, s.kv_row_stride());
  const long nv = elements(s, s.v_row_stride()), no = elements(s, s.out_row_stride());
  const Fp32View q32 = input(type, q, nq), k32 = input(type, k, nk), v32 = input(type, v, nv);
  const Fp32View o32 = input(type, o, no), do32 = input(type, dout, no);
  const Fp32View dq32 = output(type, dq, nq), dk32 = output(type, dk, nk), dv32 = output(type, dv, nv);
  gpu::flash_attention_backward(q32, k32, v32, o32, logsumexp, do32, dq32, dk32, dv32, s);
  dq32.store();
  dk32.store();
  dv32.store();
}

void CudaKernels::kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                             const KvCacheAttentionShape& shape) const {
  gpu::StreamScope on(stream_);
  gpu::kv_cache_attention_forward(q, k_cache, v_cache, out, shape);
}

void CudaKernels::do_adamw_step(Dtype grad_type, float* params, const void* grads, float* m, float* v, long n,
                                int step, const kernels::AdamWConfig& config) const {
  gpu::StreamScope on(stream_);
  const Fp32View g32 = input(grad_type, grads, n);
  gpu::adamw_step(params, g32, m, v, n, step, config);
}

void CudaKernels::do_sgd_step(Dtype grad_type, float* params, const void* grads, float* momentum_buf, long n,
                              const kernels::SgdConfig& config) const {
  gpu::StreamScope on(stream_);
  const Fp32View g32 = input(grad_type, grads, n);
  gpu::sgd_step(params, g32, momentum_buf, n, config);
}

}  // namespace twinsim::exec
