#include "exec/train/trainer.hpp"

#include <cstring>
#include <string>
#include <sstream>
#include <map>

#include <chrono>
#include <cmath>

#include "exec/train/data_parallel.hpp"
#include "exec/train/pipeline.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

namespace {

// The sum over the ranks of one double each, exact to double: the values cross as bit
// patterns in pairs of floats (an all-gather copies, it never adds) and are added in rank order.
double world_sum(Communicator& world, double mine) {
  static_assert(sizeof(double) == 2 * sizeof(float));
  float bits[2];
  std::memcpy(bits, &mine, sizeof mine);
  std::vector<float> all(2 * static_cast<std::size_t>(world.size()));
  world.all_gather(bits, all.data(), 2);
  double sum = 0;
  for (int r = 0; r < world.size(); ++r) {
    double v = 0;
    std::memcpy(&v, all.data() + 2 * r, sizeof v);
    sum += v;
  }
  return sum;
}

}  // namespace

std::map<std::string, std::string> job_signature(const TrainConfig& c) {
  const ModelSpec& m = c.model;
  const Plan& p = c.plan;
  std::ostringstream model, plan, training;
  model << "layers=" << m.layers << " hidden=" << m.hidden << " heads=" << m.heads << " kv_heads=" << m.kv_heads
        << " head_dim=" << m.head_dim << " ffn_hidden=" << m.ffn_hidden << " vocab=" << m.vocab
        << " activation=" << to_string(m.activation) << " norm=" << to_string(m.norm)
        << " position=" << to_string(m.position) << " max_seq_len=" << m.max_seq_len
        << " tied_embeddings=" << m.tied_embeddings << " bias=" << m.bias;
  plan << "tp=" << p.tp << " pp=" << p.pp << " dp=" << p.dp << " cp=" << p.cp << " ep=" << p.ep << " zero=" << p.zero
       << " sequence_parallel=" << p.sequence_parallel;
  if (p.dp_replicate > 1) plan << " dp_replicate=" << p.dp_replicate;  // which shard each rank holds
  plan << " stage_layers=";
  for (std::size_t i = 0; i < p.stage_layers.size(); ++i) plan << (i ? "," : "") << p.stage_layers[i];
  training << "precision=" << to_string(c.training.precision) << " optimizer=" << to_string(c.training.optimizer);
  if (c.training.lora)  // the adapters are tensors of the checkpoint: their rank and modules lay it out
    training << " lora_rank=" << c.training.lora->rank << " lora_modules=" << c.training.lora->modules;
  return {{"twinsim.model", model.str()}, {"twinsim.plan", plan.str()}, {"twinsim.training", training.str()}};
}


Trainer::Trainer(const TrainConfig& config, ProcessGroups& groups, const TokenSource& data, Profiler* profiler)
    : c_(config),
      groups_(groups),
      data_(data),
      profiler_(profiler),
      scaler_(config.initial_loss_scale, config.loss_scale_window) {
  validate(c_);
  // blocks padded to a multiple of the DP degree so ZeRO splits them evenly; under expert
  // parallelism the experts' segment to a multiple of the expert-data-parallel degree
  // (under hybrid sharding, of one shard group's degree: ZeRO shards over dp_shard, and the
  // shard's replicas sum its grads over dp_replicate)
  const bool hybrid = c_.plan.dp_replicate > 1;
  stage_ = std::make_unique<TransformerStage>(stage_config(c_, groups.coords()), dense_pad_multiple(c_.plan),
                                              expert_pad_multiple(c_.plan));
  stage_->initialize();
  optimizer_ = std::make_unique<ShardedOptimizer>(c_, stage_->blocks(), hybrid ? groups.dp_shard() : groups.dp(),
                                                  groups.tp(), stage_->config().sequence_parallel, profiler,
                                                  expert_pad_multiple(c_.plan) > 0 ? &groups_.expert_dp() : nullptr,
                                                  hybrid ? &groups_.dp_replicate() : nullptr);
  stage_->set_hooks(optimizer_.get());
}

void Trainer::load(int micro, MicroBatchState& st) const {
  const int mb = static_cast<int>(c_.training.micro_batch), seq = static_cast<int>(c_.training.seq_len);
  const std::int64_t first = first_sequence_of_micro_batch(steps_done_, static_cast<int>(c_.training.global_batch),
                                                           groups_.dims().dp, groups_.coords().dp, micro, mb);
  TokenBatch b = data_.batch(first, mb, seq);
  st.tokens.assign(b.input.begin(), b.input.end());
  st.targets.assign(b.target.begin(), b.target.end());
}

void Trainer::finalize_grads() {
  const bool sp = stage_->config().sequence_parallel;
  ParamBlock* tied = stage_->tied_embedding_block();
  const bool sum_tied = tied && groups_.in_embedding_group() && groups_.embedding().size() > 1;
  if (c_.plan.shards_grads()) {
    // the buckets were reduce-scattered in the backward, each timed as a dp.grad_reduce
    // (the SP sums with them, zero.cpp); any left over the same way
    optimizer_->reduce_grads();
    if (!sum_tied) return;
    OpScope op(profiler_, op_names::kDpGradReduce);
    with_storage(c_.training.precision, [&]<class T>() {
      std::size_t n = 0;
      all_reduce_tied_embedding_grads(optimizer_->reduced_grads<T>(*tied, n), n, groups_.embedding());
    });
    return;
  }
  OpScope op(profiler_, op_names::kDpGradReduce);
  with_storage(c_.training.precision, [&]<class T>() {
    if (sp)
      for (ParamBlock* b : stage_->blocks()) all_reduce_sequence_parallel_grads(*b, b->grads.as<T>(), groups_.tp());
    if (sum_tied) all_reduce_tied_embedding_grads(tied->grads.as<T>(), tied->grads.size(), groups_.embedding());
  });
  optimizer_->reduce_grads();
}

void Trainer::stop_if_not_finite(double loss) {
  const std::string step = "step " + std::to_string(steps_done_) + ": ";
  if (!std::isfinite(loss))  // every rank holds the same loss: all stop here together
    throw std::runtime_error(step + "the loss is " + std::to_string(loss) +
                             "; the run stops before the update (a learning rate too high, or bad data)");
  const std::string bad = optimizer_->first_non_finite_grad();
  float found = bad.empty() ? 0.0f : 1.0f;
  groups_.world().all_reduce(&found, 1, ReduceOp::max);
  if (found == 0) return;
  throw std::runtime_error(step + (bad.empty() ? std::string("another rank's gradient") : "the gradient of " + bad) +
                           " holds NaN or Inf while the loss is " + std::to_string(loss) +
                           "; the run stops before the update");
}

bool Trainer::apply_update() {
  {
    OpScope op(profiler_, op_names::kOptimizerStep);
    if (c_.training.precision == Dtype::fp16) {
      float found = optimizer_->local_overflow() ? 1.0f : 0.0f;
      groups_.world().all_reduce(&found, 1, ReduceOp::max);  // every rank skips together
      const float used_scale = scaler_.scale();
      if (!scaler_.update(found > 0)) return false;
      optimizer_->scale_grads(1.0f / used_scale);
    }
    if (c_.training.optim.grad_clip > 0) {
      // torch.nn.utils.clip_grad_norm_ over the whole model (Megatron clip_grad_norm_fp32):
      // the global L2 norm of the unscaled grads, then all scaled by clip / (norm + 1e-6)
      // when that is below 1
      grad_norm_ = std::sqrt(world_sum(groups_.world(), optimizer_->local_grad_square_sum()));
      const double coef = c_.training.optim.grad_clip / (grad_norm_ + 1e-6);
      if (coef < 1) optimizer_->scale_grads(static_cast<float>(coef));
    }
    optimizer_->step();
  }
  optimizer_->share_params();
  return true;
}

StepResult Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  StepResult r;
  r.loss_scale = c_.training.precision == Dtype::fp16 ? scaler_.scale() : 1.0f;
  const int m = c_.micro_batches(), dp = groups_.dims().dp;
  {
    OpScope op(profiler_, op_names::kOptimizerZeroGrad);  // Megatron's zero_grad_buffer
    optimizer_->begin_step();
  }
  // each micro-batch's mean loss enters with 1/(m dp): the DP sum of the grads is then
  // the grad of the global batch's mean loss
  ModelContext ctx{&groups_.tp(), profiler_};
  if (c_.plan.ep > 1) ctx.ep = &groups_.ep();
  PipelineRun run{*stage_, ctx, groups_.pp(), m,
                  r.loss_scale / static_cast<float>(m * dp),
                  [this](int i, MicroBatchState& st) { load(i, st); }};
  const std::vector<float> losses = run_pipeline(c_.plan.schedule, run);
  finalize_grads();
  // the global mean loss, from the last stage's first TP rank of every replica, summed in
  // double: each rank's partial sum travels as its bits (an all-gather, no float
  // arithmetic) and every rank adds them in rank order, so all hold the same value
  double mine = 0;
  if (!losses.empty() && groups_.coords().tp == 0)
    for (float l : losses) mine += static_cast<double>(l) / static_cast<double>(m * dp);
  r.loss = world_sum(groups_.world(), mine);
  if (c_.training.precision != Dtype::fp16) stop_if_not_finite(r.loss);
  r.skipped = !apply_update();
  r.grad_norm = grad_norm_;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  float slowest = static_cast<float>(seconds);
  groups_.world().all_reduce(&slowest, 1, ReduceOp::max);
  r.seconds = slowest;
  ++steps_done_;
  return r;
}

std::map<std::string, std::vector<float>> Trainer::parameters() {
  std::map<std::string, std::vector<float>> out;
  for (ParamBlock* b : stage_->blocks()) {
    const std::vector<float> flat = optimizer_->gathered_params(*b);
    for (const ParamSlot& s : b->slots())
      out[s.spec.name].assign(flat.begin() + s.offset, flat.begin() + s.offset + s.count);
  }
  return out;
}

TensorFile Trainer::save_state() {
  TensorFile file;
  optimizer_->save_state(file);
  const float scaler[3] = {scaler_.scale(), static_cast<float>(scaler_.good_steps()),
                           static_cast<float>(scaler_.skipped_steps())};
  file.add_f32("trainer.loss_scaler", {3}, scaler);  // scale, good steps, skipped steps: exact in fp32
  file.metadata()["twinsim.steps_done"] = std::to_string(steps_done_);
  file.metadata()["twinsim.world_rank"] = std::to_string(groups_.world_rank());
  file.metadata()["twinsim.world_size"] = std::to_string(groups_.dims().world_size());
  file.metadata()["twinsim.seed"] = std::to_string(c_.seed);
  for (const auto& [key, value] : job_signature(c_)) file.metadata()[key] = value;
  return file;
}

void Trainer::load_state(const TensorFile& file) {
  const auto meta = [&](const char* key) {
    const auto it = file.metadata().find(key);
    if (it == file.metadata().end()) throw CheckpointError(std::string("checkpoint has no metadata ") + key);
    return it->second;
  };
  const auto expect = [&](const char* key, const std::string& mine) {
    if (meta(key) != mine)
      throw CheckpointError(std::string("checkpoint ") + key + "=" + meta(key) + " but this run has " + mine +
                            ": it belongs to another job");
  };
  expect("twinsim.world_rank", std::to_string(groups_.world_rank()));
  expect("twinsim.world_size", std::to_string(groups_.dims().world_size()));
  expect("twinsim.seed", std::to_string(c_.seed));
  // model, plan and training (checkpoints written before these keys carry none: unchecked)
  for (const auto& [key, mine] : job_signature(c_)) {
    const auto it = file.metadata().find(key);
    if (it != file.metadata().end() && it->second != mine)
      throw CheckpointError("checkpoint " + key + " is '" + it->second + "' but this run has '" + mine +
                            "': it was written by another model, plan or training setup");
  }
  optimizer_->load_state(file);
  const std::vector<float> scaler = file.f32("trainer.loss_scaler");
  if (scaler.size() != 3) throw CheckpointError("checkpoint trainer.loss_scaler must hold 3 values");
  scaler_.restore(scaler[0], static_cast<int>(scaler[1]), static_cast<int>(scaler[2]));
  steps_done_ = std::stoi(meta("twinsim.steps_done"));
}

}  // namespace twinsim::exec
