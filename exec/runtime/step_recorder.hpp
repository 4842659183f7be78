#pragma once
// Records the kernel calls of a stretch of the executor's work (a step, a micro-batch) on any
// backend, op by op under the simulator's op names (ModelContext::op opens the ops; a
// profiler must be on for them to be named): which kernels each op called and the GEMM
// FLOPs they did. A test lines the record up with the simulator's op list for the same plan
// (models/layer_ops.hpp): the executor's model and the op list are independent code, so an
// op the executor runs differently from the prediction shows (tests/unit/exec_model/
// recorded_ops_test.cpp).
#include <string>
#include <string_view>
#include <vector>

#include "exec/runtime/kernel_table.hpp"

namespace twinsim::exec {

struct RecordedOp {
  std::string name;                  // "layer0.mlp.fc1.fwd"
  std::vector<std::string> kernels;  // in call order: "linear_forward", ...
  double flops = 0;                  // of its GEMMs (2 m n k each)
};

class StepRecorder final : public KernelObserver {
 public:
  // Observes `table` until destroyed.
  explicit StepRecorder(const KernelTable& table);
  ~StepRecorder() override;
  StepRecorder(const StepRecorder&) = delete;
  StepRecorder& operator=(const StepRecorder&) = delete;

  void on_op_begin(std::string_view op) override;
  void on_op_end() override;
  void on_kernel(std::string_view kernel, double flops) override;

  const std::vector<RecordedOp>& ops() const { return ops_; }
  // Kernels called outside every op.
  const std::vector<std::string>& unattributed() const { return unattributed_; }
  // The GEMM FLOPs of every op of this name, summed (an op may run once per micro-batch).
  double flops_of(std::string_view op) const;
  bool ran(std::string_view op) const;
  void clear();

 private:
  const KernelTable& table_;
  std::vector<RecordedOp> ops_;
  std::vector<std::size_t> open_;  // indices of the ops open now, innermost last
  std::vector<std::string> unattributed_;
};

}  // namespace twinsim::exec
