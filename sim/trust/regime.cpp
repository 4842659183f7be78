#include "sim/trust/regime.hpp"

#include <cctype>

namespace twinsim::trust {

std::string Regime::describe() const {
  std::string out;
  for (const std::string& v : values) {
    if (!out.empty()) out.push_back(' ');
    out.append(v);
  }
  return out;
}

std::string scale_bucket(long long gpus) {
  if (gpus <= 1) return "1";
  if (gpus <= 8) return "2-8";
  if (gpus <= 512) return "9-512";
  if (gpus <= 4096) return "513-4096";
  return ">4096";
}

std::string gpu_family(const std::string& gpu_name) {
  std::string family = gpu_name.substr(0, gpu_name.find('-'));
  for (char& c : family) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return family.empty() ? "unknown" : family;
}

namespace {

std::string parallelism_kinds(const Plan& plan) {
  std::string kinds;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!kinds.empty()) kinds.push_back('+');
    kinds.append(name);
  };
  add(plan.tp > 1, "tp");
  add(plan.pp > 1, "pp");
  add(plan.cp > 1, "cp");
  add(plan.ep > 1, "ep");
  add(plan.dp > 1, plan.zero >= 3 ? "zero3" : "dp");
  return kinds.empty() ? "single" : kinds;
}

}  // namespace

Regime regime_of(const Scenario& s) {
  Regime r;
  r[Dim::workload] = s.is_training() ? "training" : "serving";
  r[Dim::gpu] = gpu_family(s.cluster.gpu.name);
  r[Dim::stack] = s.stack.name.empty() ? "none" : s.stack.name;
  r[Dim::model] = s.model.moe ? "moe" : "dense";
  r[Dim::parallelism] = parallelism_kinds(s.plan);
  r[Dim::scale] = scale_bucket(static_cast<long long>(s.plan.world_size()));
  return r;
}

}  // namespace twinsim::trust
