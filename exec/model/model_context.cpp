#include "exec/model/model_context.hpp"

#include "exec/runtime/watchdog.hpp"

namespace twinsim::exec {

OpScope::OpScope(Profiler* profiler, std::string name, Backend* backend)
    : profiler_(profiler), backend_(backend), name_(std::move(name)) {
  if (!profiler_) return;
  watchdog_progress(name_);  // every op begun is also the rank's heartbeat (exec/runtime/watchdog.hpp)
  if (KernelObserver* observer = device().kernels().observer()) observer->on_op_begin(name_);
  start_ = Profiler::Clock::now();
}

OpScope::~OpScope() {
  if (!profiler_) return;
  // the op's kernels have run: its time is theirs, not their launch's
  device().end_timed_op();
  profiler_->record(name_, start_, Profiler::Clock::now());
  if (KernelObserver* observer = device().kernels().observer()) observer->on_op_end();
}

Backend& OpScope::device() const { return backend_ ? *backend_ : current_backend(); }

OpScope ModelContext::op(int layer, const char* name, Pass pass) const {
  if (!profiler || !profiler->enabled()) return OpScope(nullptr, {});
  return OpScope(profiler, op_names::op_name(layer, name, pass), &device());
}

}  // namespace twinsim::exec
