#include "calibrate/op_host.hpp"

#include <array>
#include <chrono>
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/runtime/profiler.hpp"

namespace twinsim::calibrate {

namespace {

// A Llama-style decoder layer's ops in the order a decode runs them (models/op_names.hpp)
constexpr std::array<const char*, 11> kLayerOps = {"attn.norm", "attn.qkv",      "attn.rope",   "attn.core",
                                                   "attn.proj", "attn.residual", "mlp.norm",    "mlp.gate_up",
                                                   "mlp.act",   "mlp.down",      "mlp.residual"};

double one_repeat_s(exec::Profiler& profiler, int ops) {
  exec::ModelContext ctx;
  ctx.profiler = &profiler;
  profiler.clear();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) {
    const int k = i % static_cast<int>(kLayerOps.size());
    const int layer = (i / static_cast<int>(kLayerOps.size())) % 8;
    const exec::OpScope op = ctx.op(layer, kLayerOps[static_cast<std::size_t>(k)], exec::Pass::fwd);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / ops;
}

}  // namespace

Stats op_host_time(int repeats, int ops) {
  exec::Profiler profiler;
  one_repeat_s(profiler, ops);  // warm-up: the profiler's maps and vectors grown once
  std::vector<double> per_op;
  for (int r = 0; r < repeats; ++r) per_op.push_back(one_repeat_s(profiler, ops));
  return stats_of(per_op);
}

}  // namespace twinsim::calibrate
