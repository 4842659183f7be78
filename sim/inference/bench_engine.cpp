#include "sim/inference/bench_engine.hpp"

#include <string>

#include "scenario/errors.hpp"

namespace twinsim {

std::string_view to_string(BenchEngine e) {
  switch (e) {
    case BenchEngine::sglang: return "sglang";
    case BenchEngine::trtllm: return "trtllm";
    case BenchEngine::vllm: break;
  }
  return "vllm";
}

std::optional<BenchEngine> find_bench_engine(std::string_view name) {
  for (BenchEngine e : {BenchEngine::vllm, BenchEngine::sglang, BenchEngine::trtllm})
    if (name == to_string(e)) return e;
  return std::nullopt;
}

BenchEngine parse_bench_engine(std::string_view name, std::string_view flag) {
  if (const std::optional<BenchEngine> e = find_bench_engine(name)) return *e;
  throw ScenarioError(std::string(flag), std::string(name),
                      "must be vllm, sglang or trtllm (the benchmark script whose result block is printed; "
                      "without a name, the stack's engine)");
}

BenchEngine default_bench_engine(const StackSpec& stack) {
  const std::string_view name = stack.name;
  if (name == "sglang") return BenchEngine::sglang;
  if (name.substr(0, 6) == "trtllm") return BenchEngine::trtllm;
  return BenchEngine::vllm;
}

}  // namespace twinsim
