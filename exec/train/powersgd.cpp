#include "exec/train/powersgd.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>

#include "exec/model/host_view.hpp"
#include "exec/model/tensor.hpp"
#include "exec/runtime/backend.hpp"
#include "kernels/common/storage.hpp"

namespace twinsim::exec {

namespace {

// A matrix's sides as the GEMM kernel takes them.
int rows(const PowerSgdReducer::Matrix& m) { return static_cast<int>(m.rows); }
int cols(const PowerSgdReducer::Matrix& m) { return static_cast<int>(m.cols); }
int rank(const PowerSgdReducer::Matrix& m) { return static_cast<int>(m.rank); }

// A host vector's device twin, for the table's GEMMs and the group's collectives (NCCL takes
// device buffers only): the vector itself where the host's memory is the device's (the CPU
// backend), else a device copy; load() brings the device's values back.
class DeviceTwin {
 public:
  DeviceTwin(Backend& device, std::vector<float>& host) : device_(device), host_(host) {
    if (device.host_can_access_device() || host.empty()) return;
    copy_ = Tensor::uninitialized(MemCategory::buffers, host.size());
    device.copy_to_device(copy_.data(), host.data(), host.size() * sizeof(float));
  }
  float* get() { return copy_.size() > 0 ? copy_.data() : host_.data(); }
  void load() {
    if (copy_.size() > 0) device_.copy_to_host(host_.data(), copy_.data(), host_.size() * sizeof(float));
  }

 private:
  Backend& device_;
  std::vector<float>& host_;
  Tensor copy_;
};

void all_reduce_on_device(Backend& device, Communicator& dp, std::vector<float>& values) {
  if (values.empty()) return;
  DeviceTwin twin(device, values);
  dp.all_reduce(twin.get(), values.size());
  twin.load();
}

}  // namespace

void orthogonalize(float* a, std::size_t rows, std::size_t cols) {
  for (std::size_t j = 0; j < cols; ++j) {
    double norm = 0;
    for (std::size_t i = 0; i < rows; ++i) norm += static_cast<double>(a[i * cols + j]) * a[i * cols + j];
    const auto scale = static_cast<float>(1.0 / (std::sqrt(norm) + 1e-8));
    for (std::size_t i = 0; i < rows; ++i) a[i * cols + j] *= scale;
    for (std::size_t k = j + 1; k < cols; ++k) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += static_cast<double>(a[i * cols + j]) * a[i * cols + k];
      for (std::size_t i = 0; i < rows; ++i) a[i * cols + k] -= static_cast<float>(dot) * a[i * cols + j];
    }
  }
}

PowerSgdReducer::PowerSgdReducer(const ParamBlock& block, int rank, std::uint64_t seed) {
  if (rank < 1) throw std::invalid_argument("PowerSGD: the rank must be at least 1");
  std::size_t covered = 0, p_size = 0, q_size = 0;
  for (const ParamSlot& slot : block.slots()) {
    if (!slot.spec.trainable) continue;  // a frozen parameter has no grad (ParamBlock::grad_size)
    // this rank's rows x cols: tensor parallelism splits one of the full shape's sides
    const auto full_cols = static_cast<std::size_t>(slot.spec.cols);
    const std::size_t rows = slot.spec.shard == Shard::cols ? static_cast<std::size_t>(slot.spec.rows)
                                                            : slot.count / full_cols;
    const std::size_t cols = rows > 0 ? slot.count / rows : 0;
    const std::size_t r = std::min({rows, cols, static_cast<std::size_t>(rank)});
    if (rows > 1 && cols > 1 && rows * cols > 2 * (rows + cols) * r) {  // worth it (min_compression_rate 2)
      matrices_.push_back({slot.offset, rows, cols, r, p_size, q_size});
      p_size += rows * r;
      q_size += cols * r;
    } else {
      whole_.emplace_back(slot.offset, slot.count);
    }
    covered = std::max(covered, slot.offset + slot.count);
  }
  if (covered < block.grad_size()) whole_.emplace_back(covered, block.grad_size() - covered);  // the DP padding
  residual_ = Tensor(MemCategory::grads, block.grad_size());
  p_.assign(p_size, 0.0f);
  q_.assign(q_size, 0.0f);
  // the first Q: N(0, 1) from a generator every DP rank seeds alike
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(block.name()));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : q_) x = normal(rng);
}

// The factors' small Gram-Schmidt and the error feedback run on the host (HostView copies the
// block's gradients and residual where the device's memory is not the host's); the GEMMs on
// the backend's table and the all-reduces on device buffers.
template <class T>
void PowerSgdReducer::reduce(T* g, std::size_t n, Communicator& dp) {
  if (n != residual_.size()) throw std::logic_error("PowerSGD: the gradient block's size changed");
  Backend& device = current_backend();
  HostView<T> grads(device, g, n);
  HostView<float> residual(device, residual_.data(), n);
  T* gh = grads.get();
  float* r = residual.get();
  work_.resize(n);
  for (std::size_t i = 0; i < n; ++i) work_[i] = kernels::to_float(gh[i]) + r[i];  // M'
  // 2. the values sent whole
  sent_.clear();
  for (const auto& [at, count] : whole_) sent_.insert(sent_.end(), work_.begin() + at, work_.begin() + at + count);
  all_reduce_on_device(device, dp, sent_);
  // 3. P = M Q, summed, orthogonalised (the warm-started Q orthogonalised first)
  const KernelTable& table = device.kernels();
  DeviceTwin work(device, work_);
  for (const Matrix& m : matrices_) orthogonalize(q_.data() + m.q_at, m.cols, m.rank);
  {
    DeviceTwin p(device, p_), q(device, q_);
    for (const Matrix& m : matrices_)
      table.gemm_forward(work.get() + m.offset, q.get() + m.q_at, p.get() + m.p_at, rows(m), rank(m), cols(m), false,
                         false);
    if (!p_.empty()) dp.all_reduce(p.get(), p_.size());
    p.load();
  }
  // 4. Q = M^T P, summed
  for (const Matrix& m : matrices_) orthogonalize(p_.data() + m.p_at, m.rows, m.rank);
  {
    DeviceTwin p(device, p_), q(device, q_);
    for (const Matrix& m : matrices_)
      table.gemm_forward(work.get() + m.offset, p.get() + m.p_at, q.get() + m.q_at, cols(m), rank(m), rows(m), true,
                         false);
    if (!q_.empty()) dp.all_reduce(q.get(), q_.size());
    q.load();
  }
  // 5. the sum: the whole values as reduced, P Q^T for the matrices; the residual keeps
  // M' - sum / ranks (the sum as stored)
  sum_.resize(n);
  std::size_t next = 0;
  for (const auto& [at, count] : whole_)
    for (std::size_t i = at; i < at + count; ++i) sum_[i] = sent_[next++];
  {
    DeviceTwin p(device, p_), q(device, q_), sum(device, sum_);
    for (const Matrix& m : matrices_)
      table.gemm_forward(p.get() + m.p_at, q.get() + m.q_at, sum.get() + m.offset, rows(m), cols(m), rank(m), false,
                         true);
    sum.load();
  }
  const auto ranks = static_cast<float>(dp.size());
  for (std::size_t i = 0; i < n; ++i) {
    gh[i] = kernels::from_float<T>(sum_[i]);
    r[i] = work_[i] - kernels::to_float(gh[i]) / ranks;
  }
  grads.store();
  residual.store();
}

template void PowerSgdReducer::reduce<float>(float*, std::size_t, Communicator&);
template void PowerSgdReducer::reduce<kernels::bf16>(kernels::bf16*, std::size_t, Communicator&);
template void PowerSgdReducer::reduce<kernels::fp16>(kernels::fp16*, std::size_t, Communicator&);

}  // namespace twinsim::exec
