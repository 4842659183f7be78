#include "exec/train/inference_run.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "exec/model/decoder.hpp"
#include "exec/train/mixed_precision.hpp"
#include "exec/train/run_report.hpp"

namespace twinsim::exec {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

TransformerConfig whole_model(const InferenceConfig& c, int tp_rank) {
  TransformerConfig t;
  t.model = c.model;
  t.tp = c.plan.tp;
  t.tp_rank = tp_rank;
  t.micro_batch = static_cast<int>(c.workload.batch);
  t.seq_len = static_cast<int>(c.workload.prompt_len);
  t.first_layer = 0;
  t.end_layer = static_cast<int>(c.model.layers);
  t.seed = c.seed;
  return t;
}

// Seconds since `start` on the slowest rank (every rank waits for it anyway).
double slowest_since(Clock::time_point start, Communicator& world) {
  float s = std::chrono::duration<float>(Clock::now() - start).count();
  world.all_reduce(&s, 1, ReduceOp::max);
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void validate(const InferenceConfig& c) {
  const auto refuse = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.plan.pp != 1 || c.plan.dp != 1 || c.plan.cp != 1 || c.plan.ep != 1)
    refuse("inference in the executor runs tensor parallelism only: plan.pp, dp, cp and ep must be 1");
  const Dtype w = c.workload.weight_dtype;
  if (w != Dtype::fp32 && w != Dtype::bf16 && w != Dtype::fp16)
    refuse("inference.weight_dtype=" + std::string(to_string(w)) + ": the executor serves fp32, bf16 and fp16 weights");
  if (c.workload.batch < 1 || c.workload.prompt_len < 1 || c.workload.output_len < 1)
    refuse("inference.batch, prompt_len and output_len must be at least 1");
}

InferenceRecord run_inference(const InferenceConfig& c, ProcessGroups& groups, const TokenSource& prompts,
                              Profiler* profiler, TrackedAllocator& allocator, const GpuSpec& gpu) {
  validate(c);
  const int batch = static_cast<int>(c.workload.batch), prompt = static_cast<int>(c.workload.prompt_len),
            out = static_cast<int>(c.workload.output_len);
  TransformerStage stage(whole_model(c, groups.coords().tp));
  stage.initialize();
  // 16-bit weights are emulated by rounding (compute stays fp32, as in training)
  for (ParamBlock* b : stage.blocks()) round_to_storage(c.workload.weight_dtype, b->params.data(), b->params.size());
  for (ParamBlock* b : stage.blocks()) b->grads.release();  // inference keeps no grads
  allocator.reset_peaks();
  Decoder decoder(stage, batch, prompt + out);
  const ModelContext ctx{&groups.tp(), profiler};
  const TransformerConfig& tc = stage.config();
  std::vector<int> tokens;  // sequence b of the batch is the source's sequence b
  for (int b = 0; b < batch; ++b) {
    const TokenBatch s = prompts.batch(b, 1, prompt);
    tokens.insert(tokens.end(), s.input.begin(), s.input.end());
  }
  InferenceRecord r;
  groups.world().barrier();
  Clock::time_point start = Clock::now();
  Tensor logits = decoder.forward(ctx, tokens.data(), prompt);
  std::vector<int> next = greedy_tokens(ctx, logits.data(), batch, tc.local_vocab(), tc.vocab_start());
  r.ttft_s = slowest_since(start, groups.world());
  r.first_tokens.push_back(next[0]);
  for (int k = 1; k < out; ++k) {
    start = Clock::now();
    logits = decoder.forward(ctx, next.data(), 1);
    next = greedy_tokens(ctx, logits.data(), batch, tc.local_vocab(), tc.vocab_start());
    r.decode_s.push_back(slowest_since(start, groups.world()));
    r.first_tokens.push_back(next[0]);
  }
  r.kv_cache_bytes = decoder.kv_cache_bytes() * groups.dims().tp;  // every TP rank caches kv_heads/tp heads
  r.params_and_memory = measured_params_and_memory(stage, groups, allocator, gpu);
  return r;
}

json measured_inference_report(const InferenceConfig& c, ProcessGroups& groups, const InferenceRecord& r,
                               const Profiler& profiler) {
  const json ops = profiler.gather_summary(groups.world());
  if (groups.world_rank() != 0) return nullptr;
  const double batch = static_cast<double>(c.workload.batch), out = static_cast<double>(c.workload.output_len);
  double total = r.ttft_s;
  for (double s : r.decode_s) total += s;
  const double cached_tokens = batch * static_cast<double>(c.workload.prompt_len + c.workload.output_len);
  json op_times = json::object();
  for (const auto& [name, op] : ops["ops"].items())
    op_times[name] = {{"count", op["count"].get<double>() / op["ranks"].get<double>()},
                      {"mean_total_s", op["mean_total_s"]},
                      {"max_total_s", op["max_total_s"]}};
  return {{"source", "measured"},
          {"params", r.params_and_memory["params"]},
          {"memory", r.params_and_memory["memory"]},
          {"inference",
           {{"ttft_s", r.ttft_s},
            {"tpot_s", median(r.decode_s)},
            {"output_tokens_per_s", total > 0 ? batch * out / total : 0},
            // the cache over all TP ranks per cached token (prompt + output) of the batch
            {"kv_cache_bytes_per_token", static_cast<double>(r.kv_cache_bytes) / cached_tokens},
            {"decode_steps_s", r.decode_s}}},
          {"generated_tokens", r.first_tokens},
          {"ops", op_times},
          // weights and KV are kept as fp32 values (16-bit weights emulated by rounding)
          {"storage_bytes_per_element", 4}};
}

}  // namespace twinsim::exec
