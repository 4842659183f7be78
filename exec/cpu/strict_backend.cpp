#include "exec/cpu/strict_backend.hpp"

#include "exec/cpu/staging_communicator.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace twinsim::exec {

namespace {

std::string address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

// The Allocator (its accounting and block cache) over one arena; device blocks are filled on
// the stream, pinned host blocks by the host.
class ArenaAllocator final : public Allocator {
 public:
  ArenaAllocator(DeviceArena& arena, WorkerStream& stream, std::int64_t capacity_bytes)
      : Allocator(capacity_bytes), arena_(arena), stream_(stream) {}
  ~ArenaAllocator() override { release_cache(); }

 protected:
  void* reserve_block(std::size_t bytes) override { return arena_.allocate(bytes); }
  void release_block(void* p, std::size_t bytes) noexcept override { arena_.release(p, bytes); }
  void fill_block(void* p, std::size_t bytes, unsigned char value) override {
    if (arena_.kind() == DeviceArena::Kind::pinned_host) {
      std::memset(p, value, bytes);
      return;
    }
    void* on_stream = arena_.worker_address(p);
    stream_.enqueue([on_stream, value, bytes] { std::memset(on_stream, value, bytes); });
  }

 private:
  DeviceArena& arena_;
  WorkerStream& stream_;
};

}  // namespace

// ---- the kernel table: check, translate, enqueue

template <class A>
A StrictKernels::on_stream(const char* name, A arg) const {
  if constexpr (std::is_pointer_v<A>) {
    if (arg == nullptr) return arg;
    if (!arena_.contains(arg))
      throw std::invalid_argument(std::string("strict-device backend: kernel ") + name + " was given host memory at " +
                                  address(arg) + "; a device kernel reads device buffers only (copy it first)");
    return static_cast<A>(arena_.worker_address(arg));
  } else {
    return arg;
  }
}

template <class Kernel, class... Args>
void StrictKernels::launch(const char* name, Kernel kernel, Args... args) const {
  std::tuple<Args...> bound{on_stream(name, args)...};  // by value: shapes outlive the call
  stream_.enqueue([this, kernel, bound] { std::apply([&](const auto&... a) { (cpu_.*kernel)(a...); }, bound); });
}

void StrictKernels::set_gemm_workspace(float* workspace) const {
  launch("set_gemm_workspace", &CpuKernels::set_gemm_workspace, workspace);
}

void StrictKernels::kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                               const KvCacheAttentionShape& shape) const {
  launch("kv_cache_attention_forward", &CpuKernels::kv_cache_attention_forward, q, k_cache, v_cache, out, shape);
}

void StrictKernels::do_gemm_forward(GemmTypes types, const void* a, const void* b, void* c, int m, int n, int k,
                                    bool trans_a, bool trans_b, float alpha, float beta) const {
  launch("gemm_forward", &CpuKernels::do_gemm_forward, types, a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

void StrictKernels::do_linear_forward(Dtype type, const void* x, const void* weight, const void* bias, void* y,
                                      int tokens, int in, int out) const {
  launch("linear_forward", &CpuKernels::do_linear_forward, type, x, weight, bias, y, tokens, in, out);
}

void StrictKernels::do_linear_backward_input(Dtype type, const void* dy, const void* weight, void* dx, int tokens,
                                             int in, int out) const {
  launch("linear_backward_input", &CpuKernels::do_linear_backward_input, type, dy, weight, dx, tokens, in, out);
}

void StrictKernels::do_linear_backward_weight(Dtype type, const void* dy, const void* x, void* dweight, int tokens,
                                              int in, int out, bool accumulate) const {
  launch("linear_backward_weight", &CpuKernels::do_linear_backward_weight, type, dy, x, dweight, tokens, in, out,
         accumulate);
}

void StrictKernels::do_linear_backward_bias(Dtype type, const void* dy, void* dbias, int tokens, int out,
                                            bool accumulate) const {
  launch("linear_backward_bias", &CpuKernels::do_linear_backward_bias, type, dy, dbias, tokens, out, accumulate);
}

void StrictKernels::do_residual_forward(Dtype type, const void* x, const void* branch, const void* bias, void* y,
                                        int rows, int cols) const {
  launch("residual_forward", &CpuKernels::do_residual_forward, type, x, branch, bias, y, rows, cols);
}

void StrictKernels::do_residual_backward(Dtype type, const void* dy, void* dbias, int rows, int cols,
                                         bool accumulate) const {
  launch("residual_backward", &CpuKernels::do_residual_backward, type, dy, dbias, rows, cols, accumulate);
}

void StrictKernels::do_vocab_embedding_forward(Dtype type, const int* tokens, const void* table, void* out, int count,
                                         int dim, int row_start, int rows) const {
  launch("vocab_embedding_forward", &CpuKernels::do_vocab_embedding_forward, type, tokens, table, out, count, dim, row_start, rows);
}

void StrictKernels::do_vocab_embedding_backward(Dtype type, const int* tokens, const void* dout, void* dtable, int count,
                                          int dim, int row_start, int rows) const {
  launch("vocab_embedding_backward", &CpuKernels::do_vocab_embedding_backward, type, tokens, dout, dtable, count, dim, row_start,
         rows);
}

void StrictKernels::do_vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) const {
  launch("vocab_parallel_row_max", &CpuKernels::do_vocab_parallel_row_max, logits, row_max, tokens, local_vocab);
}

void StrictKernels::do_vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max,
                                               float* sums, int tokens, int local_vocab, int vocab_start) const {
  launch("vocab_parallel_row_sums", &CpuKernels::do_vocab_parallel_row_sums, logits, targets, row_max, sums, tokens,
         local_vocab, vocab_start);
}

void StrictKernels::do_vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss,
                                           int tokens) const {
  launch("vocab_parallel_loss", &CpuKernels::do_vocab_parallel_loss, row_max, sums, lse, token_loss, tokens);
}

void StrictKernels::do_vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse,
                                                    float dloss, float* dlogits, int tokens, int local_vocab,
                                                    int vocab_start) const {
  launch("vocab_parallel_loss_backward", &CpuKernels::do_vocab_parallel_loss_backward, logits, targets, lse, dloss,
         dlogits, tokens, local_vocab, vocab_start);
}

void StrictKernels::do_rope(Dtype type, bool backward, const void* x, void* y, int batch, int seq, int heads,
                            int head_dim, float theta, int pos_offset) const {
  launch("rope", &CpuKernels::do_rope, type, backward, x, y, batch, seq, heads, head_dim, theta, pos_offset);
}

void StrictKernels::do_layernorm_forward(Dtype type, const void* x, const void* gamma, const void* beta, void* y,
                                         float* mean, float* rstd, int rows, int dim, float eps) const {
  launch("layernorm_forward", &CpuKernels::do_layernorm_forward, type, x, gamma, beta, y, mean, rstd, rows, dim, eps);
}

void StrictKernels::do_layernorm_backward(Dtype type, const void* dy, const void* x, const void* gamma,
                                          const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta,
                                          int rows, int dim, bool accumulate) const {
  launch("layernorm_backward", &CpuKernels::do_layernorm_backward, type, dy, x, gamma, mean, rstd, dx, dgamma, dbeta,
         rows, dim, accumulate);
}

void StrictKernels::do_rmsnorm_forward(Dtype type, const void* x, const void* gamma, void* y, float* rstd, int rows,
                                       int dim, float eps) const {
  launch("rmsnorm_forward", &CpuKernels::do_rmsnorm_forward, type, x, gamma, y, rstd, rows, dim, eps);
}

void StrictKernels::do_rmsnorm_backward(Dtype type, const void* dy, const void* x, const void* gamma,
                                        const float* rstd, void* dx, void* dgamma, int rows, int dim,
                                        bool accumulate) const {
  launch("rmsnorm_backward", &CpuKernels::do_rmsnorm_backward, type, dy, x, gamma, rstd, dx, dgamma, rows, dim,
         accumulate);
}

void StrictKernels::do_gelu_forward(Dtype type, const void* x, void* y, long n) const {
  launch("gelu_forward", &CpuKernels::do_gelu_forward, type, x, y, n);
}

void StrictKernels::do_gelu_backward(Dtype type, const void* dy, const void* x, void* dx, long n) const {
  launch("gelu_backward", &CpuKernels::do_gelu_backward, type, dy, x, dx, n);
}

void StrictKernels::do_swiglu_forward(Dtype type, const void* gate, const void* up, void* y, long n) const {
  launch("swiglu_forward", &CpuKernels::do_swiglu_forward, type, gate, up, y, n);
}

void StrictKernels::do_swiglu_backward(Dtype type, const void* dy, const void* gate, const void* up, void* dgate,
                                       void* dup, long n) const {
  launch("swiglu_backward", &CpuKernels::do_swiglu_backward, type, dy, gate, up, dgate, dup, n);
}

void StrictKernels::do_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out,
                                         void* probs, const AttentionShape& shape) const {
  launch("attention_forward", &CpuKernels::do_attention_forward, type, q, k, v, out, probs, shape);
}

void StrictKernels::do_attention_backward(Dtype type, const void* q, const void* k, const void* v, const void* probs,
                                          const void* dout, void* dq, void* dk, void* dv,
                                          const AttentionShape& shape) const {
  launch("attention_backward", &CpuKernels::do_attention_backward, type, q, k, v, probs, dout, dq, dk, dv, shape);
}

void StrictKernels::do_flash_attention_forward(Dtype type, const void* q, const void* k, const void* v, void* out,
                                               float* logsumexp, const AttentionShape& shape) const {
  launch("flash_attention_forward", &CpuKernels::do_flash_attention_forward, type, q, k, v, out, logsumexp, shape);
}

void StrictKernels::do_flash_attention_backward(Dtype type, const void* q, const void* k, const void* v,
                                                const void* out, const float* logsumexp, const void* dout, void* dq,
                                                void* dk, void* dv, const AttentionShape& shape) const {
  launch("flash_attention_backward", &CpuKernels::do_flash_attention_backward, type, q, k, v, out, logsumexp, dout,
         dq, dk, dv, shape);
}

void StrictKernels::do_adamw_step(Dtype grad_type, float* params, const void* grads, float* m, float* v, long n,
                                  int step, const kernels::AdamWConfig& config) const {
  launch("adamw_step", &CpuKernels::do_adamw_step, grad_type, params, grads, m, v, n, step, config);
}

void StrictKernels::do_sgd_step(Dtype grad_type, float* params, const void* grads, float* momentum_buf, long n,
                                const kernels::SgdConfig& config) const {
  launch("sgd_step", &CpuKernels::do_sgd_step, grad_type, params, grads, momentum_buf, n, config);
}

// ---- the backend

StrictDeviceBackend::StrictDeviceBackend(std::size_t device_bytes, std::size_t pinned_bytes)
    : device_arena_(std::make_unique<DeviceArena>(DeviceArena::Kind::device, device_bytes)),
      pinned_arena_(std::make_unique<DeviceArena>(DeviceArena::Kind::pinned_host, pinned_bytes)),
      stream_(std::make_unique<WorkerStream>()),
      kernels_(*device_arena_, *stream_),
      device_memory_(make_device_allocator(0)) {}

StrictDeviceBackend::~StrictDeviceBackend() {
  stream_->synchronize();
  device_memory_.reset();
  stream_.reset();
}

std::unique_ptr<Allocator> StrictDeviceBackend::make_device_allocator(std::int64_t capacity_bytes) const {
  return std::make_unique<ArenaAllocator>(*device_arena_, *stream_, capacity_bytes);
}

std::unique_ptr<Allocator> StrictDeviceBackend::make_host_allocator() const {
  return std::make_unique<ArenaAllocator>(*pinned_arena_, *stream_, 0);
}

void* StrictDeviceBackend::device_side(const void* p, const char* what) const {
  if (!device_arena_->contains(p))
    throw std::invalid_argument(std::string("strict-device backend: ") + what + " at " + address(p) +
                                " is not device memory of this backend");
  return device_arena_->worker_address(p);
}

void StrictDeviceBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  void* dst = device_side(device_dst, "copy_to_device's destination");
  // staged now, as cudaMemcpy from pageable memory does: the caller may reuse host_src at once
  auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(host_src),
                                                             static_cast<const unsigned char*>(host_src) + bytes);
  stream_->enqueue([dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
}

void StrictDeviceBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  const void* src = device_side(device_src, "copy_to_host's source");
  std::vector<unsigned char> staged(bytes);
  stream_->enqueue([src, &staged] { std::memcpy(staged.data(), src, staged.size()); });
  synchronize();
  std::memcpy(host_dst, staged.data(), bytes);
}

void StrictDeviceBackend::copy_to_host_async(void* pinned_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  if (!pinned_arena_->contains(pinned_dst))
    throw std::invalid_argument("strict-device backend: copy_to_host_async's destination at " + address(pinned_dst) +
                                " is not pinned host memory (make_host_allocator)");
  const void* src = device_side(device_src, "copy_to_host_async's source");
  void* dst = pinned_arena_->worker_address(pinned_dst);
  pinned_arena_->protect_pending(pinned_dst, bytes);
  stream_->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

void StrictDeviceBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  void* dst = device_side(device_dst, "copy_on_device's destination");
  const void* src = device_side(device_src, "copy_on_device's source");
  stream_->enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); });
}

void StrictDeviceBackend::fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes == 0) return;
  void* dst = device_side(device_dst, "fill_on_device's destination");
  stream_->enqueue([dst, value, bytes] { std::memset(dst, value, bytes); });
}

void StrictDeviceBackend::synchronize() {
  stream_->synchronize();
  pinned_arena_->unprotect_pending();
}

std::unique_ptr<Communicator> StrictDeviceBackend::device_communicator(Communicator& world) {
  return std::make_unique<StagingCommunicator>(*this, world);
}

}  // namespace twinsim::exec
