#include "calibrate/speed_probe.hpp"

#include <vector>

#include "calibrate/calibration.hpp"
#include "calibrate/co_runners.hpp"
#include "calibrate/compute_bench.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"

namespace twinsim::calibrate {

namespace {

namespace k = twinsim::kernels::cpu;

constexpr int kTokens = 256, kIn = 256, kOut = 768;  // a projection of the validation suite's models
constexpr long kElements = 1L << 20;

struct ProbeBuffers {
  // Rotated sets, so every call finds its operands out of cache (compute_bench cold_sets).
  int gemm_sets = cold_sets(sizeof(float) * (kTokens * kIn + kOut * kIn + kTokens * kOut));
  int memory_sets = cold_sets(sizeof(float) * 3 * kElements);
  std::vector<std::vector<float>> x, w, y, gate, up, out;
  ProbeBuffers() {
    x.assign(gemm_sets, std::vector<float>(kTokens * kIn, 0.5f));
    w.assign(gemm_sets, std::vector<float>(kOut * kIn, 0.01f));
    y.assign(gemm_sets, std::vector<float>(kTokens * kOut));
    gate.assign(memory_sets, std::vector<float>(kElements, 0.5f));
    up.assign(memory_sets, std::vector<float>(kElements, -0.25f));
    out.assign(memory_sets, std::vector<float>(kElements));
  }
  void gemm(int call) {
    const int j = call % gemm_sets;
    k::linear_forward(x[j].data(), w[j].data(), nullptr, y[j].data(), kTokens, kIn, kOut);
  }
  void memory(int call) {
    const int j = call % memory_sets;
    k::swiglu_forward(gate[j].data(), up[j].data(), out[j].data(), kElements);
  }
};

}  // namespace

SpeedProbe measure_speed_probe(int busy_processes, int repeats, double min_repeat_s) {
  ProbeBuffers b;
  int call = 0;
  const CoRunners others(busy_processes, [&b, &call] {
    b.gemm(++call);
    b.memory(++call);
  });
  SpeedProbe p;
  p.busy_processes = busy_processes;
  p.gemm_s = time_per_call([&] { b.gemm(++call); }, repeats, min_repeat_s);
  p.memory_s = time_per_call([&] { b.memory(++call); }, repeats, min_repeat_s);
  return p;
}

RelativeSpeed relative_speed(const SpeedProbe& now, const SpeedProbe& then) {
  return {then.gemm_s.median / now.gemm_s.median, then.memory_s.median / now.memory_s.median};
}

nlohmann::json speed_probe_json(const SpeedProbe& p) {
  return {{"gemm", stats_json(p.gemm_s)}, {"memory", stats_json(p.memory_s)}, {"busy_processes", p.busy_processes}};
}

SpeedProbe speed_probe_from(const nlohmann::json& j) {
  SpeedProbe p;
  p.gemm_s = stats_from(j.at("gemm"));
  p.memory_s = stats_from(j.at("memory"));
  p.busy_processes = j.at("busy_processes").get<int>();
  return p;
}

std::optional<SpeedProbe> recorded_speed_probe(const nlohmann::json& points) {
  if (!points.is_object() || !points.contains("speed_probe")) return std::nullopt;
  return speed_probe_from(points.at("speed_probe"));
}

}  // namespace twinsim::calibrate
