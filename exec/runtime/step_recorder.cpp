#include "exec/runtime/step_recorder.hpp"

namespace twinsim::exec {

StepRecorder::StepRecorder(const KernelTable& table) : table_(table) { table_.set_observer(this); }

StepRecorder::~StepRecorder() {
  if (table_.observer() == this) table_.set_observer(nullptr);
}

void StepRecorder::on_op_begin(std::string_view op) {
  open_.push_back(ops_.size());
  ops_.push_back(RecordedOp{std::string(op), {}, 0});
}

void StepRecorder::on_op_end() {
  if (!open_.empty()) open_.pop_back();
}

void StepRecorder::on_kernel(std::string_view kernel, double flops) {
  if (open_.empty()) {
    unattributed_.emplace_back(kernel);
    return;
  }
  RecordedOp& op = ops_[open_.back()];  // the innermost op did it
  op.kernels.emplace_back(kernel);
  op.flops += flops;
}

double StepRecorder::flops_of(std::string_view op) const {
  double total = 0;
  for (const RecordedOp& r : ops_)
    if (r.name == op) total += r.flops;
  return total;
}

bool StepRecorder::ran(std::string_view op) const {
  for (const RecordedOp& r : ops_)
    if (r.name == op) return true;
  return false;
}

void StepRecorder::clear() {
  ops_.clear();
  open_.clear();
  unattributed_.clear();
}

}  // namespace twinsim::exec
