#include "exec/runtime/step_recorder.hpp"

namespace twinsim::exec {

StepRecorder::StepRecorder(const KernelTable& table) : table_(table) { table_.set_observer(this); }

StepRecorder::~StepRecorder() {
  if (table_.observer() == this) table_.set_observer(nullptr);
}

void StepRecorder::on_op_begin(std::string_view op) {
  open_.push_back(ops_.size());
  ops_.push_back(RecordedOp{std::string(op), {}, 0, {}});
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

void StepRecorder::on_collective(std::string_view group, std::string_view collective, std::size_t bytes) {
  if (open_.empty()) {
    unattributed_collectives_.push_back(std::string(group) + " " + std::string(collective));
    return;
  }
  ops_[open_.back()].collectives.push_back(RecordedCollective{std::string(group), std::string(collective), bytes});
}

std::size_t StepRecorder::bytes_of(std::string_view op, std::string_view group, std::string_view collective) const {
  std::size_t total = 0;
  for (const RecordedOp& r : ops_)
    if (r.name == op)
      for (const RecordedCollective& c : r.collectives)
        if (c.group == group && c.collective == collective) total += c.bytes;
  return total;
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
  unattributed_collectives_.clear();
}

}  // namespace twinsim::exec
