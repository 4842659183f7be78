// The CUDA backend's kernel table (exec/cuda/cuda_kernels.hpp) against the CPU backend's
// (exec/cpu/cpu_kernels.hpp, the kernels/cpu references) on the same inputs, in fp32, bf16
// and fp16: every entry of the table the model calls, through the one call shape. Inputs are
// rounded to the storage type once, on the host, so both sides read the same bits; results
// differ by the GPU's summation order and math library (cuda_test_util.hpp's tolerances).
// Skipped, naming why, where no GPU is present.
#ifdef TWINSIM_HAVE_CUDA
#include <memory>
#include <vector>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cuda/cuda_backend.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::cuda_testing {
namespace {



// n values in one storage type, on the host (for the CPU table) and on the GPU (for the CUDA
// one), from the same bytes.
class Twin {
 public:
  Twin(exec::CudaBackend& gpu, Dtype type, const std::vector<float>& values)
      : gpu_(gpu), type_(type), count_(values.size()), host_(count_ * exec::storage_bytes(type)) {
    exec::with_storage(type, [&]<class T>() {
      for (std::size_t i = 0; i < count_; ++i) reinterpret_cast<T*>(host_.data())[i] = kernels::from_float<T>(values[i]);
    });
    device_ = gpu.device_allocator().allocate(host_.size(), exec::MemCategory::activations);
    gpu.copy_to_device(device_, host_.data(), host_.size());
  }
  Twin(exec::CudaBackend& gpu, Dtype type, std::size_t count, unsigned seed)
      : Twin(gpu, type, random_vector(static_cast<long>(count), seed)) {}
  ~Twin() { gpu_.device_allocator().deallocate(device_, host_.size(), exec::MemCategory::activations); }
  Twin(const Twin&) = delete;
  Twin& operator=(const Twin&) = delete;

  template <class T>
  T* cpu() { return reinterpret_cast<T*>(host_.data()); }
  template <class T>
  T* gpu() { return static_cast<T*>(device_); }
  std::vector<float> cpu_values() const { return floats(host_.data()); }
  std::vector<float> gpu_values() const {
    std::vector<unsigned char> bytes(host_.size());
    gpu_.copy_to_host(bytes.data(), device_, bytes.size());
    return floats(bytes.data());
  }

 private:
  std::vector<float> floats(const unsigned char* bytes) const {
    std::vector<float> out(count_);
    exec::with_storage(type_, [&]<class T>() {
      for (std::size_t i = 0; i < count_; ++i) out[i] = kernels::to_float(reinterpret_cast<const T*>(bytes)[i]);
    });
    return out;
  }

  exec::CudaBackend& gpu_;
  Dtype type_;
  std::size_t count_;
  std::vector<unsigned char> host_;
  void* device_ = nullptr;
};

// fp32 math on both sides: the GPU's order of summation and expf; 16-bit: one rounding of
// the stored result apart (bf16 2^-8, fp16 2^-11 relative), a few where a sum is rounded.
double tolerance(Dtype type) {
  switch (type) {
    case Dtype::bf16: return 2e-2;
    case Dtype::fp16: return 4e-3;
    default: return kFp32ReduceTol;
  }
}

class CudaKernelTable : public ::testing::TestWithParam<Dtype> {
 protected:
  void SetUp() override {
    std::string why;
    if (!exec::cuda_device_available(&why)) GTEST_SKIP() << why;
    gpu_ = std::make_unique<exec::CudaBackend>();
  }
  Dtype type() const { return GetParam(); }
  std::unique_ptr<Twin> twin(std::size_t count, unsigned seed) {
    return std::make_unique<Twin>(*gpu_, type(), count, seed);
  }
  void expect_same(const Twin& result, const char* what, double scale = 1.0) const {
    const double tol = tolerance(type()) * scale;
    expect_all_near(result.gpu_values(), result.cpu_values(), tol, tol, what);
  }
  const exec::KernelTable& cuda() const { return gpu_->kernels(); }

  std::unique_ptr<exec::CudaBackend> gpu_;
  exec::CpuKernels cpu_;
};

INSTANTIATE_TEST_SUITE_P(Storage, CudaKernelTable, ::testing::Values(Dtype::fp32, Dtype::bf16, Dtype::fp16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_P(CudaKernelTable, LinearForwardAndBackward) {
  const int tokens = 19, in = 48, out = 40;
  auto x = twin(tokens * in, 1), w = twin(out * in, 2), b = twin(out, 3), y = twin(tokens * out, 4);
  auto dy = twin(tokens * out, 5), dx = twin(tokens * in, 6), dw = twin(out * in, 7), db = twin(out, 8);
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      table->linear_forward(p(*x), p(*w), p(*b), p(*y), tokens, in, out);
      table->linear_backward_input(p(*dy), p(*w), p(*dx), tokens, in, out);
      table->linear_backward_weight(p(*dy), p(*x), p(*dw), tokens, in, out, true);
      table->linear_backward_bias(p(*dy), p(*db), tokens, out, true);
    }
  });
  gpu_->synchronize();
  expect_same(*y, "y");
  expect_same(*dx, "dx");
  expect_same(*dw, "dweight (accumulated)");
  expect_same(*db, "dbias (accumulated)");
}

TEST_P(CudaKernelTable, GemmWithFp32Output) {
  const int m = 17, n = 33, k = 29;
  auto a = twin(k * m, 9), b = twin(n * k, 10);
  Twin c(*gpu_, Dtype::fp32, static_cast<std::size_t>(m) * n, 11);
  exec::with_storage(type(), [&]<class T>() {
    cpu_.gemm_forward(a->cpu<T>(), b->cpu<T>(), c.cpu<float>(), m, n, k, true, true, 0.5f, 1.0f);
    cuda().gemm_forward(a->gpu<T>(), b->gpu<T>(), c.gpu<float>(), m, n, k, true, true, 0.5f, 1.0f);
  });
  expect_all_near(c.gpu_values(), c.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "C (fp32, beta 1)");
}

TEST_P(CudaKernelTable, ResidualAndEmbedding) {
  const int rows = 13, cols = 24, vocab_rows = 7, row_start = 3;
  auto x = twin(rows * cols, 12), branch = twin(rows * cols, 13), bias = twin(cols, 14), y = twin(rows * cols, 15);
  auto dbias = twin(cols, 16), table = twin(vocab_rows * cols, 17), dtable = twin(vocab_rows * cols, 18);
  // tokens below, inside and above the shard [3, 10), several repeated (their rows add up)
  const std::vector<int> tokens{3, 9, 0, 5, 5, 12, 3, 9, 9, 4, 10, 2, 5};
  int* d_tokens = static_cast<int*>(gpu_->device_allocator().allocate(tokens.size() * 4, exec::MemCategory::activations));
  gpu_->copy_to_device(d_tokens, tokens.data(), tokens.size() * 4);
  exec::with_storage(type(), [&]<class T>() {
    cpu_.residual_forward(x->cpu<T>(), branch->cpu<T>(), bias->cpu<T>(), y->cpu<T>(), rows, cols);
    cuda().residual_forward(x->gpu<T>(), branch->gpu<T>(), bias->gpu<T>(), y->gpu<T>(), rows, cols);
    cpu_.residual_backward(x->cpu<T>(), dbias->cpu<T>(), rows, cols, true);
    cuda().residual_backward(x->gpu<T>(), dbias->gpu<T>(), rows, cols, true);
    cpu_.vocab_embedding_forward(tokens.data(), table->cpu<T>(), branch->cpu<T>(), rows, cols, row_start, vocab_rows);
    cuda().vocab_embedding_forward(d_tokens, table->gpu<T>(), branch->gpu<T>(), rows, cols, row_start, vocab_rows);
    cpu_.vocab_embedding_backward(tokens.data(), x->cpu<T>(), dtable->cpu<T>(), rows, cols, row_start, vocab_rows);
    cuda().vocab_embedding_backward(d_tokens, x->gpu<T>(), dtable->gpu<T>(), rows, cols, row_start, vocab_rows);
  });
  // same formula, same order, one rounding: the same bits
  EXPECT_EQ(y->gpu_values(), y->cpu_values()) << "residual";
  EXPECT_EQ(branch->gpu_values(), branch->cpu_values()) << "embedding lookup";
  EXPECT_EQ(dtable->gpu_values(), dtable->cpu_values()) << "embedding gradient, tokens in order";
  expect_same(*dbias, "residual dbias");
  gpu_->device_allocator().deallocate(d_tokens, tokens.size() * 4, exec::MemCategory::activations);
}

TEST_P(CudaKernelTable, RopeNormsAndActivations) {
  const int batch = 2, seq = 5, heads = 3, dim = 16, rows = batch * seq, width = heads * dim;
  const long n = static_cast<long>(rows) * width;
  auto x = twin(n, 20), y = twin(n, 21), dy = twin(n, 22), dx = twin(n, 23), up = twin(n, 24), dup = twin(n, 25);
  auto gamma = twin(width, 26), beta = twin(width, 27), dgamma = twin(width, 28), dbeta = twin(width, 29);
  Twin mean(*gpu_, Dtype::fp32, rows, 30), rstd(*gpu_, Dtype::fp32, rows, 31);
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      table->rope_forward(p(*x), p(*y), batch, seq, heads, dim, 10000.0f, 3);
      table->rope_backward(p(*dy), p(*dx), batch, seq, heads, dim, 10000.0f, 3);
    }
  });
  expect_same(*y, "rope y");
  expect_same(*dx, "rope dx");
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      auto f = [&](Twin& t) { return on_gpu ? t.gpu<float>() : t.cpu<float>(); };
      table->layernorm_forward(p(*x), p(*gamma), p(*beta), p(*y), f(mean), f(rstd), rows, width, 1e-5f);
      table->layernorm_backward(p(*dy), p(*x), p(*gamma), f(mean), f(rstd), p(*dx), p(*dgamma), p(*dbeta), rows,
                                width, true);
    }
  });
  expect_same(*y, "layernorm y");
  expect_same(*dx, "layernorm dx", 2);
  expect_same(*dgamma, "layernorm dgamma (accumulated)", 2);
  expect_same(*dbeta, "layernorm dbeta (accumulated)");
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      auto f = [&](Twin& t) { return on_gpu ? t.gpu<float>() : t.cpu<float>(); };
      table->rmsnorm_forward(p(*x), p(*gamma), p(*y), f(rstd), rows, width, 1e-6f);
      table->rmsnorm_backward(p(*dy), p(*x), p(*gamma), f(rstd), p(*dx), p(*dgamma), rows, width, false);
      table->gelu_forward(p(*x), p(*up), n);
      table->gelu_backward(p(*dy), p(*x), p(*dup), n);
    }
  });
  expect_same(*y, "rmsnorm y");
  expect_same(*dx, "rmsnorm dx", 2);
  expect_same(*dgamma, "rmsnorm dgamma", 2);
  expect_same(*up, "gelu y");
  expect_same(*dup, "gelu dx");
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      table->swiglu_forward(p(*x), p(*dx), p(*y), n);
      table->swiglu_backward(p(*dy), p(*x), p(*dx), p(*up), p(*dup), n);
    }
  });
  expect_same(*y, "swiglu y");
  expect_same(*up, "swiglu dgate");
  expect_same(*dup, "swiglu dup");
}

// GQA (4 query heads on 2 kv heads) and V heads narrower than Q/K (multi-head latent attention).
TEST_P(CudaKernelTable, MaterialisedAttention) {
  kernels::AttentionShape s{2, 9, 4, 2, 16, 8};
  const long nq = 2L * 9 * 4 * 16, nk = 2L * 9 * 2 * 16, nv = 2L * 9 * 2 * 8, no = 2L * 9 * 4 * 8;
  auto q = twin(nq, 40), k = twin(nk, 41), v = twin(nv, 42), o = twin(no, 43), probs = twin(2L * 4 * 9 * 9, 44);
  auto dout = twin(no, 45), dq = twin(nq, 46), dk = twin(nk, 47), dv = twin(nv, 48);
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      table->attention_forward(p(*q), p(*k), p(*v), p(*o), p(*probs), s);
      table->attention_backward(p(*q), p(*k), p(*v), p(*probs), p(*dout), p(*dq), p(*dk), p(*dv), s);
    }
  });
  expect_same(*o, "out");
  expect_same(*probs, "probs");
  expect_same(*dq, "dq", 2);
  expect_same(*dk, "dk", 2);
  expect_same(*dv, "dv", 2);
}

TEST_P(CudaKernelTable, FlashAttention) {
  kernels::AttentionShape s{2, 37, 4, 2, 32};
  const long nq = 2L * 37 * 4 * 32, nk = 2L * 37 * 2 * 32;
  auto q = twin(nq, 50), k = twin(nk, 51), v = twin(nk, 52), o = twin(nq, 53), dout = twin(nq, 54);
  auto dq = twin(nq, 55), dk = twin(nk, 56), dv = twin(nk, 57);
  Twin lse(*gpu_, Dtype::fp32, 2 * 4 * 37, 58);
  exec::with_storage(type(), [&]<class T>() {
    for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu_), &cuda()}) {
      const bool on_gpu = table == &cuda();
      auto p = [&](Twin& t) { return on_gpu ? t.gpu<T>() : t.cpu<T>(); };
      float* l = on_gpu ? lse.gpu<float>() : lse.cpu<float>();
      table->flash_attention_forward(p(*q), p(*k), p(*v), p(*o), l, s);
      table->flash_attention_backward(p(*q), p(*k), p(*v), p(*o), l, p(*dout), p(*dq), p(*dk), p(*dv), s);
    }
  });
  expect_same(*o, "out");
  expect_all_near(lse.gpu_values(), lse.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "logsumexp");
  expect_same(*dq, "dq", 2);
  expect_same(*dk, "dk", 2);
  expect_same(*dv, "dv", 2);
}

TEST_P(CudaKernelTable, OptimizerStepsReadGradientsOfTheStorageType) {
  const long n = 1001;
  auto grads = twin(n, 60);
  Twin params(*gpu_, Dtype::fp32, n, 61), m(*gpu_, Dtype::fp32, n, 62), v(*gpu_, Dtype::fp32, random_vector(n, 63, 0.0f, 1.0f));
  Twin sgd_params(*gpu_, Dtype::fp32, n, 64), momentum(*gpu_, Dtype::fp32, n, 65);
  const kernels::AdamWConfig adam{};
  kernels::SgdConfig sgd{};
  sgd.momentum = 0.9f;
  exec::with_storage(type(), [&]<class G>() {
    cpu_.adamw_step(params.cpu<float>(), grads->cpu<G>(), m.cpu<float>(), v.cpu<float>(), n, 3, adam);
    cuda().adamw_step(params.gpu<float>(), grads->gpu<G>(), m.gpu<float>(), v.gpu<float>(), n, 3, adam);
    cpu_.sgd_step(sgd_params.cpu<float>(), grads->cpu<G>(), momentum.cpu<float>(), n, sgd);
    cuda().sgd_step(sgd_params.gpu<float>(), grads->gpu<G>(), momentum.gpu<float>(), n, sgd);
  });
  for (const Twin* t : {&params, &m, &v, &sgd_params, &momentum})
    expect_all_near(t->gpu_values(), t->cpu_values(), kFp32Tol, kFp32Tol, "optimizer state");
}

TEST(CudaKvCacheAttention, MatchesTheCpuKernel) {
  std::string why;
  if (!exec::cuda_device_available(&why)) GTEST_SKIP() << why;
  exec::CudaBackend gpu;
  exec::CpuKernels cpu;
  kernels::KvCacheAttentionShape s{};
  s.batch = 2, s.new_tokens = 3, s.cached = 5, s.cache_rows = 10, s.heads = 4, s.kv_heads = 2, s.head_dim = 16;
  Twin q(gpu, Dtype::fp32, 2 * 3 * 4 * 16, 70), k(gpu, Dtype::fp32, 2 * 10 * 2 * 16, 71);
  Twin v(gpu, Dtype::fp32, 2 * 10 * 2 * 16, 72), out(gpu, Dtype::fp32, 2 * 3 * 4 * 16, 73);
  cpu.kv_cache_attention_forward(q.cpu<float>(), k.cpu<float>(), v.cpu<float>(), out.cpu<float>(), s);
  gpu.kernels().kv_cache_attention_forward(q.gpu<float>(), k.gpu<float>(), v.gpu<float>(), out.gpu<float>(), s);
  expect_all_near(out.gpu_values(), out.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "out");
}

// The vocabulary-parallel cross-entropy's stages (fp32 logits whatever the storage type) on a
// shard [5, 5 + 37) of a larger vocabulary, with targets inside and outside it; large logits so
// the row maximum matters; the backward in place, as the head runs it.
TEST(CudaVocabParallelLoss, StagesMatchTheCpuKernels) {
  std::string why;
  if (!exec::cuda_device_available(&why)) GTEST_SKIP() << why;
  exec::CudaBackend gpu;
  exec::CpuKernels cpu;
  const int tokens = 9, local_vocab = 37, vocab_start = 5;
  const std::vector<int> targets{5, 41, 0, 20, 42, 100, 6, 5, 30};
  Twin logits(gpu, Dtype::fp32, random_vector(tokens * local_vocab, 80, -40.0f, 40.0f));
  Twin row_max(gpu, Dtype::fp32, tokens, 81), sums(gpu, Dtype::fp32, 2 * tokens, 82);
  Twin lse(gpu, Dtype::fp32, tokens, 83), loss(gpu, Dtype::fp32, tokens, 84);
  int* d_targets = static_cast<int*>(gpu.device_allocator().allocate(tokens * 4, exec::MemCategory::activations));
  gpu.copy_to_device(d_targets, targets.data(), tokens * 4);
  for (const exec::KernelTable* table : {static_cast<const exec::KernelTable*>(&cpu), &gpu.kernels()}) {
    const bool on_gpu = table == &gpu.kernels();
    auto p = [&](Twin& t) { return on_gpu ? t.gpu<float>() : t.cpu<float>(); };
    const int* tg = on_gpu ? d_targets : targets.data();
    table->vocab_parallel_row_max(p(logits), p(row_max), tokens, local_vocab);
    table->vocab_parallel_row_sums(p(logits), tg, p(row_max), p(sums), tokens, local_vocab, vocab_start);
    table->vocab_parallel_loss(p(row_max), p(sums), p(lse), p(loss), tokens);
    table->vocab_parallel_loss_backward(p(logits), tg, p(lse), 0.5f, p(logits), tokens, local_vocab, vocab_start);
  }
  EXPECT_EQ(row_max.gpu_values(), row_max.cpu_values()) << "a maximum is exact";
  expect_all_near(sums.gpu_values(), sums.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "sum_exp, target logit");
  expect_all_near(lse.gpu_values(), lse.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "logsumexp");
  expect_all_near(loss.gpu_values(), loss.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "token loss");
  expect_all_near(logits.gpu_values(), logits.cpu_values(), kFp32ReduceTol, kFp32ReduceTol, "dlogits in place");
  gpu.device_allocator().deallocate(d_targets, tokens * 4, exec::MemCategory::activations);
}

// What `twinsim run --device cuda` refuses with: the typed error, the reason and why.
TEST(CudaDeviceCheck, RequireCudaDeviceNamesWhyOrTheDevice) {
  std::string why;
  if (exec::cuda_device_available(&why)) {
    EXPECT_EQ(exec::require_cuda_device(), why);
    return;
  }
  try {
    exec::require_cuda_device();
    FAIL() << "no GPU, yet require_cuda_device did not throw";
  } catch (const exec::DeviceUnavailableError& e) {
    EXPECT_EQ(e.reason(), exec::DeviceUnavailableError::Reason::no_device);
    EXPECT_NE(std::string(e.what()).find("--device cuda: no GPU is present"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinsim::cuda_testing
#endif  // TWINSIM_HAVE_CUDA
