#include "exec/model/model_context.hpp"

#include "exec/runtime/watchdog.hpp"

namespace twinsim::exec {

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd_dgrad: return "bwd_dgrad";
    case Pass::bwd_wgrad: return "bwd_wgrad";
    case Pass::recompute: return "recompute";
  }
  return "fwd";
}

OpScope::OpScope(Profiler* profiler, std::string name) : profiler_(profiler), name_(std::move(name)) {
  if (!profiler_) return;
  watchdog_progress(name_);  // every op begun is also the rank's heartbeat (exec/runtime/watchdog.hpp)
  start_ = Profiler::Clock::now();
}

OpScope::~OpScope() {
  if (profiler_) profiler_->record(name_, start_, Profiler::Clock::now());
}

OpScope ModelContext::op(int layer, const char* name, Pass pass) const {
  if (!profiler || !profiler->enabled()) return OpScope(nullptr, {});
  std::string full = layer >= 0 ? "layer" + std::to_string(layer) + "." : std::string();
  full += name;
  full += '.';
  full += pass_name(pass);
  return OpScope(profiler, std::move(full));
}

}  // namespace twinsim::exec
