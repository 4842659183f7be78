// How long one memory prediction takes (issue 2 target: under 50 microseconds).
#include <benchmark/benchmark.h>

#include "sim/memory/memory_report.hpp"

namespace twinsim {
namespace {

ClusterSpec cluster(std::int64_t memory_bytes, int nodes) {
  ClusterSpec c;
  c.gpu.memory_bytes = memory_bytes;
  c.gpus_per_node = 8;
  c.nodes = nodes;
  return c;
}

// Llama 3 70B (Llama Team 2024, Table 3) on 64 H100 80GB: TP 8, PP 4 interleaved x 5,
// DP 2, sequence parallel, distributed optimizer, selective recompute, 8K tokens.
Scenario llama3_70b_on_64_h100() {
  Scenario s;
  ModelSpec& m = s.model;
  m.layers = 80, m.hidden = 8192, m.heads = 64, m.kv_heads = 8, m.head_dim = 128, m.ffn_hidden = 28672;
  m.activation = Activation::swiglu, m.norm = Norm::rmsnorm, m.position = Position::rope;
  m.vocab = 128256, m.max_seq_len = 8192, m.tied_embeddings = false, m.bias = false;
  s.cluster = cluster(85'899'345'920, 8);
  Plan& p = s.plan;
  p.tp = 8, p.pp = 4, p.dp = 2, p.sequence_parallel = true, p.zero = 1;
  p.recompute = Recompute::selective, p.schedule = Schedule::interleaved, p.virtual_stages = 5;
  TrainingWorkload t;
  t.seq_len = 8192, t.global_batch = 512, t.micro_batch = 1;
  s.training = t;
  return s;
}

// GPT-3 175B as Narayanan et al. 2021 Table 1 trains it: TP 8, PP 16, DP 12 on 1536 A100s.
Scenario gpt3_175b_on_1536_a100() {
  Scenario s;
  ModelSpec& m = s.model;
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.kv_heads = 96, m.head_dim = 128, m.ffn_hidden = 49152;
  m.vocab = 51200, m.max_seq_len = 2048, m.dropout = 0.1;
  s.cluster = cluster(85'899'345'920, 192);
  s.plan.tp = 8, s.plan.pp = 16, s.plan.dp = 12, s.plan.recompute = Recompute::full;
  TrainingWorkload t;
  t.seq_len = 2048, t.global_batch = 1536, t.micro_batch = 1;
  s.training = t;
  return s;
}

void BM_PredictMemory_Llama3_70B_64xH100(benchmark::State& state) {
  const Scenario s = llama3_70b_on_64_h100();
  for (auto _ : state) benchmark::DoNotOptimize(predict_memory(s));
}
BENCHMARK(BM_PredictMemory_Llama3_70B_64xH100)->Unit(benchmark::kMicrosecond);

void BM_PredictMemory_GPT3_175B_1536xA100(benchmark::State& state) {
  const Scenario s = gpt3_175b_on_1536_a100();
  for (auto _ : state) benchmark::DoNotOptimize(predict_memory(s));
}
BENCHMARK(BM_PredictMemory_GPT3_175B_1536xA100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace twinsim
