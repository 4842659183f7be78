#include "exec/train/inference_run.hpp"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "exec/model/decoder.hpp"
#include "exec/model/host_view.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/train/mixed_precision.hpp"
#include "exec/train/run_report.hpp"
#include "models/op_names.hpp"
#include "models/report_inference.hpp"
#include "models/report_ops.hpp"
#include "models/report_schema.hpp"
#include "scenario/errors.hpp"

namespace twinsim::exec {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The whole model on this rank: its TP shard and, under expert parallelism, its experts.
TransformerConfig whole_model(const InferenceConfig& c, const RankCoords& coords) {
  TransformerConfig t;
  t.model = c.model;
  t.tp = c.plan.tp;
  t.tp_rank = coords.tp;
  t.ep = c.plan.ep;
  t.ep_rank = coords.ep;
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

using OpTotals = std::map<std::string, OpTotal, std::less<>>;

OpTotals totals_of(const Profiler* profiler) { return profiler ? profiler->totals() : OpTotals{}; }

// What the profiler added between two snapshots of its totals.
OpTotals added(const OpTotals& before, const OpTotals& after) {
  OpTotals out;
  for (const auto& [name, t] : after) {
    const auto b = before.find(name);
    const OpTotal d = b == before.end() ? t : OpTotal{t.total_s - b->second.total_s, t.count - b->second.count};
    if (d.count > 0) out.emplace(name, d);
  }
  return out;
}

// Greedy sampling, profiled as the simulator's "head.sample" op (the argmax over the
// vocabulary and, under TP, the all-reduces that agree on it).
std::vector<int> sample(const ModelContext& ctx, Profiler* profiler, const float* logits, int batch,
                        const TransformerConfig& tc) {
  std::optional<ProfileScope> scope;
  if (profiler && profiler->enabled()) scope.emplace(*profiler, op_names::op_name(-1, op_names::kHeadSample, op_names::OpPass::fwd));
  return greedy_tokens(ctx, logits, batch, tc.local_vocab(), tc.vocab_start());
}

json totals_json(const OpTotals& ops) {
  json j = json::object();
  for (const auto& [name, t] : ops) j[name] = {t.total_s, t.count};
  return j;
}

// Every rank's ops of one phase ({name: [total_s, count]}) as the report's per-pass map.
json phase_ops(const std::vector<json>& ranks, const char* phase, double passes) {
  struct Sum {
    double total_s = 0, max_total_s = 0, count = 0;
    int ranks = 0;
  };
  std::map<std::string, Sum> sums;
  for (const json& r : ranks)
    for (const auto& [name, v] : r[phase].items()) {
      Sum& s = sums[name];
      const double total = v[0].get<double>();
      s.total_s += total;
      s.max_total_s = std::max(s.max_total_s, total);
      s.count += v[1].get<double>();
      s.ranks += 1;
    }
  MeasuredOps out;
  if (passes <= 0) return json::object();
  for (const auto& [name, s] : sums) out[name] = {s.count / s.ranks / passes, s.total_s / s.ranks / passes, s.max_total_s / passes};
  return to_json(out, OpUnit::pass);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The replica's prompts: sequence b of replica d's batch is the source's sequence
// d x batch + b; with a prefix cache every prompt opens with the replica's first
// sequence's first `prefix` tokens (the shared system prompt). [batch, prompt] row-major.
std::vector<int> prompt_tokens(const TokenSource& prompts, int first_sequence, int batch, int prompt, int prefix) {
  std::vector<int> tokens;
  for (int b = 0; b < batch; ++b) {
    const TokenBatch s = prompts.batch(first_sequence + b, 1, prompt);
    tokens.insert(tokens.end(), s.input.begin(), s.input.end());
    if (b > 0) std::copy_n(tokens.begin(), prefix, tokens.end() - prompt);
  }
  return tokens;
}

// One untimed request before the timed one (a prefill of the whole prompts and two decode
// steps, in a cache of the timed one's size): a serving engine has run its kernels, its
// collectives' first calls and its allocator's first blocks before it serves (vLLM's
// profile run and warm-up at start, LLMEngine._initialize_kv_caches), and the first
// pass of a fresh process here ran 2-10x its steady time (page faults, the MPI
// connections' set-up: 18 ms of a 61 ms TTFT in embedding.reduce alone, tiny-llama TP 2).
void warm_up(TransformerStage& stage, const ModelContext& ctx, const std::vector<int>& tokens, int batch, int max_len) {
  const int prompt = static_cast<int>(tokens.size()) / batch;
  Decoder warm(stage, batch, max_len);
  Tensor logits = warm.forward(ctx, tokens.data(), prompt);
  std::vector<int> next = greedy_tokens(ctx, logits.data(), batch, stage.config().local_vocab(), stage.config().vocab_start());
  for (int k = 0; k < 2 && warm.length() < max_len; ++k) {
    logits = warm.forward(ctx, next.data(), 1);
    next = greedy_tokens(ctx, logits.data(), batch, stage.config().local_vocab(), stage.config().vocab_start());
  }
}

}  // namespace

// What the executor does not serve: a ScenarioError naming the key, the value and the rule, so
// `twinsim run` exits 2 as for any scenario key it refuses (docs/scenario/command-line.md).
void validate(const InferenceConfig& c) {
  const auto refuse = [](const std::string& key, const std::string& value, const std::string& rule) {
    throw ScenarioError(key, value, rule);
  };
  if (c.plan.pp != 1 || c.plan.cp != 1)
    refuse(c.plan.pp != 1 ? "plan.pp" : "plan.cp", std::to_string(c.plan.pp != 1 ? c.plan.pp : c.plan.cp),
           "is not served: inference in the executor runs tensor, data and expert parallelism (plan.pp and cp 1)");
  // data-parallel replicas serve their own batches; expert parallelism splits the experts over them
  if (c.plan.ep != 1 && !c.model.moe)
    refuse("plan.ep", std::to_string(c.plan.ep), "needs a model with experts (model.moe) for expert parallelism");
  if (c.plan.ep < 1 || c.plan.dp % c.plan.ep != 0)
    refuse("plan.ep", std::to_string(c.plan.ep), "must divide plan.dp=" + std::to_string(c.plan.dp));
  const Dtype w = c.workload.weight_dtype;
  if (w != Dtype::fp32 && w != Dtype::bf16 && w != Dtype::fp16)
    refuse("inference.weight_dtype", std::string(to_string(w)), "is not served by the executor (fp32, bf16, fp16)");
  if (c.decode_rounds < 1) refuse("--decode-rounds", std::to_string(c.decode_rounds), "must be at least 1");
  for (const auto& [key, value] : {std::pair{"inference.batch", c.workload.batch},
                                   {"inference.prompt_len", c.workload.prompt_len},
                                   {"inference.output_len", c.workload.output_len}})
    if (value < 1) refuse(key, std::to_string(value), "must be at least 1");
  if (c.workload.prefix_tokens < 0 || c.workload.prefix_tokens >= c.workload.prompt_len)
    refuse("inference.prefix_tokens", std::to_string(c.workload.prefix_tokens),
           "must be at least 0 and less than inference.prompt_len=" + std::to_string(c.workload.prompt_len));
  if (c.workload.speculative)
    refuse("inference.speculative", "",
           "the executor decodes one token per step (speculative decoding is simulated only)");
  if (c.workload.disaggregation)
    refuse("inference.disaggregation", "",
           "the executor prefills and decodes on the same ranks (disaggregation is simulated only)");
}

InferenceRecord run_inference(const InferenceConfig& c, ProcessGroups& groups, const TokenSource& prompts,
                              Profiler* profiler, Allocator& allocator, const GpuSpec& gpu) {
  validate(c);
  const int batch = static_cast<int>(c.workload.batch), prompt = static_cast<int>(c.workload.prompt_len),
            out = static_cast<int>(c.workload.output_len);
  TransformerStage stage(whole_model(c, groups.coords()));
  stage.initialize();
  // serving keeps fp32 arrays: 16-bit weights are emulated by rounding (training stores 16 bits)
  for (ParamBlock* b : stage.blocks()) {
    HostView<float> params(current_backend(), b->params.data(), b->params.size());
    round_to_storage(c.workload.weight_dtype, params.get(), b->params.size());
    params.store();
  }
  for (ParamBlock* b : stage.blocks()) b->grads.release();  // inference keeps no grads
  ModelContext ctx{&groups.tp(), profiler};
  if (c.plan.ep > 1) ctx.ep = &groups.ep();
  const TransformerConfig& tc = stage.config();
  const int prefix = static_cast<int>(c.workload.prefix_tokens);
  const std::vector<int> tokens = prompt_tokens(prompts, groups.coords().dp * batch, batch, prompt, prefix);
  warm_up(stage, ctx, tokens, batch, prompt + out);
  if (profiler) profiler->clear();  // the report's op times are the timed request's
  allocator.reset_peaks();          // its blocks stay cached, as a warmed-up engine's
  Decoder decoder(stage, batch, prompt + out);
  // the prefix cache, filled by an earlier request: its K,V computed once, outside the timing
  std::optional<Decoder> cached;
  if (prefix > 0) {
    cached.emplace(stage, 1, prefix);
    cached->forward(ctx, tokens.data(), prefix);
    decoder.start_from_prefix(*cached, prefix);
  }
  std::vector<int> suffix;  // what the prefill computes: every prompt after the cached prefix
  for (int b = 0; b < batch; ++b)
    suffix.insert(suffix.end(), tokens.begin() + b * prompt + prefix, tokens.begin() + (b + 1) * prompt);
  InferenceRecord r;
  const OpTotals at_start = totals_of(profiler);
  groups.world().barrier();
  Clock::time_point start = Clock::now();
  Tensor logits = decoder.forward(ctx, suffix.data(), prompt - prefix);
  std::vector<int> next = sample(ctx, profiler, logits.data(), batch, tc);
  r.ttft_s = slowest_since(start, groups.world());
  r.first_tokens.push_back(next[0]);
  const OpTotals after_prefill = totals_of(profiler);
  const std::vector<int> first = next;
  for (int round = 0; round < c.decode_rounds; ++round) {
    if (round > 0) decoder.rewind(prompt), next = first;  // the same passes again
    for (int k = 1; k < out; ++k) {
      start = Clock::now();
      logits = decoder.forward(ctx, next.data(), 1);
      next = sample(ctx, profiler, logits.data(), batch, tc);
      r.decode_s.push_back(slowest_since(start, groups.world()));
      if (round == 0) r.first_tokens.push_back(next[0]);
    }
    if (round == 0) r.request_s = r.ttft_s + std::accumulate(r.decode_s.begin(), r.decode_s.end(), 0.0);
  }
  r.prefill_ops = added(at_start, after_prefill);
  r.decode_ops = added(after_prefill, totals_of(profiler));
  // the model's cache: every TP rank caches kv_heads/tp heads, or (MLA) the whole latent,
  // which counts once, as the simulator's kv_cache_bytes_per_token counts it
  const std::int64_t cache = decoder.kv_cache_bytes() + (cached ? cached->kv_cache_bytes() : 0);
  r.kv_cache_bytes = cache * (c.model.mla ? 1 : groups.dims().tp);
  r.params_and_memory = measured_params_and_memory(stage, groups, allocator, gpu);
  return r;
}

json measured_inference_report(const InferenceConfig& c, ProcessGroups& groups, const InferenceRecord& r,
                               const Profiler& profiler) {
  const json ops = profiler.gather_summary(groups.world());
  const std::vector<std::string> phases = groups.world().gather_bytes(
      json{{"prefill", totals_json(r.prefill_ops)}, {"decode", totals_json(r.decode_ops)}}.dump(), 0);
  if (groups.world_rank() != 0) return nullptr;
  std::vector<json> rank_phases;
  for (const std::string& t : phases) rank_phases.push_back(json::parse(t));
  const double decode_passes = static_cast<double>(r.decode_s.size());
  const double batch = static_cast<double>(c.workload.batch), out = static_cast<double>(c.workload.output_len);
  const double total = r.request_s;  // one request's, whatever the decode rounds
  const double cached_tokens = batch * static_cast<double>(c.workload.prompt_len + c.workload.output_len);
  json op_times = json::object();
  for (const auto& [name, op] : ops["ops"].items())
    op_times[name] = {{"count", op["count"].get<double>() / op["ranks"].get<double>()},
                      {"mean_total_s", op["mean_total_s"]},
                      {"max_total_s", op["max_total_s"]}};
  json inference = {{"decode_steps_s", r.decode_s},
                    {"prefill", {{"passes", 1}, {"ops", phase_ops(rank_phases, "prefill", 1)}}},
                    {"decode", {{"passes", decode_passes}, {"ops", phase_ops(rank_phases, "decode", decode_passes)}}}};
  InferenceSummary summary;
  summary.ttft_s = r.ttft_s;
  summary.tpot_s = median(r.decode_s);
  // every data-parallel replica's batch, as the simulator counts them
  summary.output_tokens_per_s = total > 0 ? c.plan.dp * batch * out / total : 0;
  // the model's cache per cached token (prompt + output) of the batch
  summary.kv_cache_bytes_per_token = static_cast<double>(r.kv_cache_bytes) / cached_tokens;
  write_inference_summary(inference, summary);
  return {{kSchemaVersionKey, kReportSchemaVersion},
          {"source", "measured"},
          {"params", r.params_and_memory["params"]},
          {"memory", r.params_and_memory["memory"]},
          {"inference", inference},
          {"generated_tokens", r.first_tokens},
          {"ops", op_times},
          // weights and KV are kept as fp32 values (16-bit weights emulated by rounding)
          {"storage_bytes_per_element", 4},
          {"device", std::string(current_backend().name())}};  // the kernels' backend
}

}  // namespace twinsim::exec
