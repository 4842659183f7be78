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
#include "exec/runtime/recording_communicator.hpp"

namespace twinsim::exec {

struct RecordedCollective {
  std::string group;       // "tp", "dp", "pp", "ep", ...
  std::string collective;  // "all_reduce", "all_gather", "send", ...
  std::size_t bytes = 0;   // the whole tensor (recording_communicator.hpp)
};

struct RecordedOp {
  std::string name;                  // "layer0.mlp.fc1.fwd"
  std::vector<std::string> kernels;  // in call order: "linear_forward", ...
  double flops = 0;                  // of its GEMMs (2 m n k each)
  std::vector<RecordedCollective> collectives;  // in call order, with the process groups recorded
};

// Collectives are recorded too where the process groups report to it
// (ProcessGroups::record_collectives(recorder)).
class StepRecorder final : public KernelObserver, public CollectiveObserver {
 public:
  // Observes `table` until destroyed.
  explicit StepRecorder(const KernelTable& table);
  ~StepRecorder() override;
  StepRecorder(const StepRecorder&) = delete;
  StepRecorder& operator=(const StepRecorder&) = delete;

  void on_op_begin(std::string_view op) override;
  void on_op_end() override;
  void on_kernel(std::string_view kernel, double flops) override;
  void on_collective(std::string_view group, std::string_view collective, std::size_t bytes) override;

  const std::vector<RecordedOp>& ops() const { return ops_; }
  // Kernels called outside every op.
  const std::vector<std::string>& unattributed() const { return unattributed_; }
  // Collectives run outside every op ("group collective").
  const std::vector<std::string>& unattributed_collectives() const { return unattributed_collectives_; }
  // The GEMM FLOPs of every op of this name, summed (an op may run once per micro-batch).
  double flops_of(std::string_view op) const;
  bool ran(std::string_view op) const;
  // The bytes of every `collective` over `group` in the ops of this name, summed.
  std::size_t bytes_of(std::string_view op, std::string_view group, std::string_view collective) const;
  void clear();

 private:
  const KernelTable& table_;
  std::vector<RecordedOp> ops_;
  std::vector<std::size_t> open_;  // indices of the ops open now, innermost last
  std::vector<std::string> unattributed_;
  std::vector<std::string> unattributed_collectives_;
};

}  // namespace twinsim::exec
