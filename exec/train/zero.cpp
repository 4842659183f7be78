#include "exec/train/zero.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "exec/model/host_view.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/train/data_parallel.hpp"
#include "exec/train/mixed_precision.hpp"
#include "exec/train/quantized_exchange.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

namespace {

// The params' and grads' storage type (validated: fp32, bf16 or fp16).
Dtype storage(const TrainConfig& c) { return c.training.precision; }

template <class T>
Tensor copy_of(MemCategory category, const T* data, std::size_t n) {
  Tensor t = Tensor::uninitialized_of<T>(category, n);
  current_backend().copy_on_device(t.raw(), data, n * sizeof(T));
  return t;
}

// The fp32 master copy of 16-bit weights (Megatron's Float16OptimizerWithFloat16Params
// clones the 16-bit params to fp32).
template <class T>
Tensor widened(MemCategory category, const T* data, std::size_t n, bool on_host = false) {
  Tensor t = on_host ? Tensor::on_host(category, n, Dtype::fp32, Fill::uninitialized) : Tensor::uninitialized(category, n);
  HostView<const T> in(current_backend(), data, n);
  std::vector<float> staged(on_host ? 0 : n);
  float* out = on_host ? t.data() : staged.data();
  for (std::size_t i = 0; i < n; ++i) out[i] = kernels::to_float(in.get()[i]);
  if (!on_host) current_backend().copy_to_device(t.data(), staged.data(), n * sizeof(float));
  return t;
}

// The trainable parts of [lo, hi) of `block`, from lo, in the slots' order: the elements the
// optimizer keeps states for (models/optimizer_state.hpp). A share without a frozen slot is one
// span, the whole share (its padding with it, as before LoRA).
std::vector<BlockShard::Span> optimizer_spans(const ParamBlock& block, std::size_t lo, std::size_t hi, bool& compact) {
  std::vector<BlockShard::Span> spans;
  compact = false;
  for (const ParamSlot& slot : block.slots()) {
    const std::size_t a = std::max(lo, slot.offset), b = std::min(hi, slot.offset + slot.count);
    if (a >= b) continue;
    if (slot.spec.trainable) spans.push_back({a - lo, b - a});
    else compact = true;
  }
  if (!compact) spans.assign(1, {0, hi - lo});
  return spans;
}

std::size_t span_elements(const std::vector<BlockShard::Span>& spans) {
  std::size_t n = 0;
  for (const BlockShard::Span& sp : spans) n += sp.n;
  return n;
}

// The fp32 master copy of the spans of a share's 16-bit weights, back to back.
template <class T>
Tensor widened_spans(MemCategory category, const T* share, const std::vector<BlockShard::Span>& spans, bool on_host) {
  std::size_t end = 0;
  for (const BlockShard::Span& sp : spans) end = std::max(end, sp.at + sp.n);
  HostView<const T> in(current_backend(), share, end);
  std::vector<T> picked;
  for (const BlockShard::Span& sp : spans) picked.insert(picked.end(), in.get() + sp.at, in.get() + sp.at + sp.n);
  return widened(category, picked.data(), picked.size(), on_host);
}

}  // namespace

std::int64_t ddp_bucket_elements(const TrainConfig& config) {
  return config.plan.overlap_grad_reduce ? dp_bucket_params(config.plan) : 0;
}

int expert_pad_multiple(const Plan& plan) {
  // the experts need a segment of their own where their group is not the dense DP group
  return plan.ep > 1 || plan.etp() != plan.tp ? static_cast<int>(plan.expert_dp_group_size()) : 0;
}

int dense_pad_multiple(const Plan& plan) { return plan.dp / std::max(1, plan.dp_replicate); }

void ShardedOptimizer::add_shard(ParamBlock* b, Communicator& group, bool experts, std::size_t begin, std::size_t end) {
  BlockShard s;
  s.block = b;
  s.group = &group;
  s.replicas = experts ? nullptr : replicas_;  // expert segments under HSDP: refused (train_config.cpp)
  s.experts = experts;
  s.begin = begin;
  s.end = end;
  const std::size_t n = end - begin;
  const auto d = static_cast<std::size_t>(group.size());
  if (shard_optimizer_ && n % d != 0)
    throw std::logic_error(b->name() + (experts ? " (experts)" : "") + ": flat size not padded to the group's degree");
  s.lo = shard_optimizer_ ? begin + group.rank() * (n / d) : begin;
  s.hi = shard_optimizer_ ? s.lo + n / d : end;
  const std::size_t share = s.hi - s.lo;
  s.spans = optimizer_spans(*b, s.lo, s.hi, s.compact);
  const std::size_t states = span_elements(s.spans);
  with_storage(storage(c_), [&]<class T>() {
    // ZeRO-Offload (Ren et al. 2021 §4.1): the fp32 weights the update steps (for fp32
    // training too: DeepSpeed's fp32 partition) and the moments live on the host
    // (a frozen block, LoRA's embedding or norms, has no state)
    if (states > 0 && (offload_ || !std::is_same_v<T, float>))
      s.master = s.compact ? widened_spans(MemCategory::optimizer, b->params.as<T>() + s.lo, s.spans, offload_)
                           : widened(MemCategory::optimizer, b->params.as<T>() + s.lo, share, offload_);
    const auto state = [&](std::size_t k) {
      return offload_ ? Tensor::on_host(MemCategory::optimizer, k) : Tensor(MemCategory::optimizer, k);
    };
    if (states > 0) s.m = state(states);
    if (states > 0 && c_.training.optimizer == Optimizer::adam) s.v = state(states);
    if (shard_grads_) s.grad_shard = Tensor::zeros_of<T>(MemCategory::grads, share);
    if (shard_params_) s.param_shard = copy_of(MemCategory::params, b->params.as<T>() + s.lo, share);
  });
  // the full grads exist only during a step's backward (ZeRO 2/3), the full params only
  // while used (ZeRO 3): freed once the block's last segment has its shard
  if (shard_grads_ && end == covered(*b)) b->grads.release();
  if (shard_params_ && end == covered(*b)) b->params.release();
  // PowerSGD runs without expert parallelism only (train_config.cpp): one segment, the whole
  // block; the block-quantised and top-k compressions take each segment over its group
  if (!shard_grads_ && group.size() > 1 && c_.plan.gradient_compression == GradCompression::powersgd)
    s.powersgd = PowerSgdReducer(*b, c_.plan.gradient_powersgd_rank, c_.seed);
  else if (!shard_grads_ && group.size() > 1)
    s.compressor = GradCompressor(c_.plan.gradient_compression, n, c_.plan.gradient_topk_ratio);
  shards_.push_back(std::move(s));
}

std::size_t ShardedOptimizer::covered(const ParamBlock& block) const {
  return shard_params_ ? block.flat_size() : block.grad_size();
}

ShardedOptimizer::ShardedOptimizer(const TrainConfig& config, std::vector<ParamBlock*> blocks, Communicator& dp,
                                   Communicator& tp, bool sequence_parallel, Profiler* profiler,
                                   Communicator* expert_dp, Communicator* replicas)
    : c_(config),
      dp_(dp),
      tp_(tp),
      replicas_(replicas && replicas->size() > 1 ? replicas : nullptr),
      sp_(sequence_parallel),
      shard_optimizer_(config.plan.shards_optimizer()),
      shard_grads_(config.plan.shards_grads()),
      shard_params_(config.plan.shards_params()),
      offload_(config.plan.offload_optimizer),
      profiler_(profiler) {
  for (ParamBlock* b : blocks) {
    const std::size_t n = covered(*b), split = std::min(b->experts_begin(), n);
    add_shard(b, dp, false, 0, split);
    if (split < n) add_shard(b, expert_dp ? *expert_dp : dp, true, split, n);
  }
  if (offload_ && config.plan.offload_device == OffloadDevice::nvme) {
    swap_ = std::make_unique<SwapFile>();
    std::int64_t offset = 0;
    for (BlockShard& s : shards_) {
      s.swap_offset = offset;
      for (const Tensor* t : {&s.master, &s.m, &s.v}) offset += static_cast<std::int64_t>(t->bytes());
    }
    swap_out_states(false);  // the initial states, before any step
  }
  if (!shard_grads_) return;
  // buckets in backward order, each closed once it reaches the size (Megatron's
  // _ParamAndGradBuffer fills them the same way)
  const std::int64_t limit = c_.bucket_elements >= 0 ? c_.bucket_elements : ddp_bucket_elements(c_);
  bucket_of_.assign(shards_.size(), 0);
  std::int64_t filled = 0;
  bool closed = true;
  for (int i = static_cast<int>(shards_.size()) - 1; i >= 0; --i) {
    if (closed) {
      buckets_.emplace_back();
      filled = 0;
      closed = false;
    }
    buckets_.back().shards.insert(buckets_.back().shards.begin(), i);
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
    filled += static_cast<std::int64_t>(shards_[i].end - shards_[i].begin);
    closed = limit > 0 && filled >= limit && first_of_block(i);  // a block's segments share a bucket
  }
  used_.assign(buckets_.size(), false);
}

BlockShard& ShardedOptimizer::shard_of(const ParamBlock& block) {
  const int i = shard_index(block);
  if (i + 1 < static_cast<int>(shards_.size()) && shards_[i + 1].block == &block)
    throw std::logic_error(block.name() + ": two segments (experts apart), no one share");
  return shards_[i];
}

int ShardedOptimizer::shard_index(const ParamBlock& block) const {
  for (std::size_t i = 0; i < shards_.size(); ++i)
    if (shards_[i].block == &block) return static_cast<int>(i);
  throw std::logic_error("optimizer has no block " + block.name());
}

void ShardedOptimizer::begin_step() {
  for (BlockShard& s : shards_) {
    if (!shard_grads_) s.block->grads.zero();
    else s.grad_shard.zero();
  }
}

void ShardedOptimizer::reduce_grads() {
  if (shard_grads_) {  // the buckets were reduced in backward; none should be left
    for (Bucket& b : buckets_)
      if (b.grads) retire(b);
    return;
  }
  for (BlockShard& s : shards_) {
    Communicator& group = *s.group;
    if (group.size() == 1 && !s.replicas) continue;  // (a shard group of one still sums over its replicas)
    with_storage(storage(c_), [&]<class T>() {
      T* g = s.block->grads.as<T>() + s.begin;
      const std::size_t n = s.end - s.begin;
      // PowerSGD leaves every rank the whole sum (ZeRO-1 then reads its shard of it)
      if (s.powersgd.active()) return s.powersgd.reduce(g, n, group);
      // ZeRO-1 (Megatron's distributed optimizer) reduce-scatters: each rank needs only the
      // grads of its shard, summed, in place in the buffer
      const bool scatter = shard_optimizer_ && !shard_grads_;
      const std::size_t ranks = static_cast<std::size_t>(group.size()),
                        chunk = scatter ? s.hi - s.lo : (n + ranks - 1) / ranks;
      s.compressor.compress(g, n, chunk);  // with plan.gradient_compression: what is sent
      const GradCompression wire = s.compressor.quantized() ? s.compressor.kind() : GradCompression::none;
      T* share = s.block->grads.as<T>() + s.lo;
      if (!scatter) {
        if (wire != GradCompression::none) quantized_all_reduce(g, n, wire, group);
        else group.all_reduce(g, n);
        return;
      }
      if (wire != GradCompression::none) quantized_reduce_scatter(g, share, chunk, wire, group);
      else if (group.size() > 1) group.reduce_scatter(g, share, chunk);
      // hybrid sharding: the shard group's sum of the share, summed over the replicas too
      if (s.replicas) s.replicas->all_reduce(share, chunk);
    });
  }
}

bool ShardedOptimizer::local_overflow() { return !first_non_finite_grad().empty(); }

std::string ShardedOptimizer::first_non_finite_grad() {
  return with_storage(storage(c_), [&]<class T>() -> std::string {
    for (BlockShard& s : shards_) {
      std::size_t n = 0;
      const T* device_grads = reduced_grads<T>(s, n);
      HostView<const T> grads(current_backend(), device_grads, n);
      const T* g = grads.get();
      if (!has_inf_or_nan(g, n)) continue;
      for (const ParamSlot& slot : s.block->slots()) {  // which parameter of the block's share
        const std::size_t a = std::max(s.lo, slot.offset), b = std::min(s.hi, slot.offset + slot.count);
        if (a < b && has_inf_or_nan(g + (a - s.lo), b - a)) return slot.spec.name;
      }
      return s.block->name() + (s.experts ? " (experts' padding)" : " (padding)");
    }
    return std::string();
  });
}

double ShardedOptimizer::local_grad_square_sum() {
  // ZeRO 0: every rank of a segment's group (DP, or expert-DP for the experts') holds its
  // reduced grads whole, the group's first counts them; sharded, each rank its share
  return with_storage(storage(c_), [&]<class T>() {
    double sum = 0;
    for (BlockShard& s : shards_) {
      if (!shard_optimizer_ && s.group->rank() != 0) continue;
      if (s.replicas && s.replicas->rank() != 0) continue;  // hybrid sharding: each share once
      std::size_t n = 0;
      const T* device_grads = reduced_grads<T>(s, n);
      HostView<const T> grads(current_backend(), device_grads, n);
      const T* g = grads.get();
      for (const ParamSlot& slot : s.block->slots()) {
        if (!slot.spec.trainable || !counted_once(*s.block, slot, c_.model.tied_embeddings, tp_.rank())) continue;
        const std::size_t a = std::max(s.lo, slot.offset), b = std::min(s.hi, slot.offset + slot.count);
        for (std::size_t i = a; i < b; ++i) {
          const double v = kernels::to_float(g[i - s.lo]);
          sum += v * v;
        }
      }
    }
    return sum;
  });
}

void ShardedOptimizer::scale_grads(float factor) {
  with_storage(storage(c_), [&]<class T>() {
    for (BlockShard& s : shards_) {
      std::size_t n = 0;
      T* device_grads = reduced_grads<T>(s, n);
      HostView<T> grads(current_backend(), device_grads, n);
      T* g = grads.get();
      for (std::size_t i = 0; i < n; ++i) g[i] = kernels::from_float<T>(kernels::to_float(g[i]) * factor);
      grads.store();
    }
  });
}

template <class T>
void ShardedOptimizer::update(BlockShard& s, T* params, const T* grads) {
  if (s.spans.empty()) return;  // nothing of the share trains (LoRA's frozen blocks)
  float* weights = nullptr;  // fp32 storage steps the params; 16-bit storage (or offload) its fp32 masters
  if constexpr (std::is_same_v<T, float>) weights = offload_ ? s.master.data() : params;
  else weights = s.master.data();
  const bool steps_params = std::is_same_v<T, float> && !offload_;  // indexed as the share, not the spans
  // the schedule's rate for this update (updates_ counts from 1), peaking at the run's lr
  OptimizerSettings schedule = c_.training.optim;
  schedule.lr = c_.lr;
  const auto lr = static_cast<float>(schedule.lr_at(updates_ - 1));
  // offloaded: the host's weights, moments and gradient copy, stepped by the CPU
  const KernelTable& table = offload_ ? current_backend().host_kernels() : current_backend().kernels();
  // step each parameter's part of [lo, hi) with its own weight decay; its states at k (the
  // share's index i unless frozen slots are left out of them: optimizer_spans)
  std::size_t k = 0;
  for (const ParamSlot& slot : s.block->slots()) {
    const std::size_t a = std::max(s.lo, slot.offset), b = std::min(s.hi, slot.offset + slot.count);
    if (a >= b || !slot.spec.trainable) continue;  // LoRA: the frozen base is not stepped
    const std::size_t i = a - s.lo;
    if (!s.compact) k = i;
    float* w = weights + (steps_params ? i : k);
    const float wd = slot.spec.weight_decay ? c_.weight_decay : 0.0f;
    if (c_.training.optimizer == Optimizer::adam) {
      const OptimizerSettings& o = c_.training.optim;
      kernels::AdamWConfig cfg;
      cfg.lr = lr;
      cfg.beta1 = static_cast<float>(o.beta1);
      cfg.beta2 = static_cast<float>(o.beta2);
      cfg.eps = static_cast<float>(o.eps);
      cfg.weight_decay = wd;
      table.adamw_step(w, grads + i, s.m.data() + k, s.v.data() + k, static_cast<long>(b - a), updates_, cfg);
    } else {
      kernels::SgdConfig cfg;
      cfg.lr = lr;
      cfg.weight_decay = wd;
      table.sgd_step(w, grads + i, nullptr, static_cast<long>(b - a), cfg);
    }
    k += b - a;
  }
  if constexpr (!std::is_same_v<T, float>)
    if (!offload_) {
      HostView<const float> master(current_backend(), s.master.data(), s.master.size());
      HostView<T> stored(current_backend(), params, s.hi - s.lo);
      std::size_t at = 0;  // the spans' masters back to back
      for (const BlockShard::Span& sp : s.spans) {
        store_rounded(master.get() + at, stored.get() + sp.at, sp.n);
        at += sp.n;
      }
      stored.store();
    }
}

// ZeRO-Offload's step for one shard: its reduced gradients copied to the host, the CPU's
// update of the host's fp32 weights and moments, the weights in the storage type copied
// back (Ren et al. 2021 §4.2); the copies are timed apart inside optimizer.step.
template <class T>
void ShardedOptimizer::offloaded_update(BlockShard& s, T* params, const T* grads, std::size_t n) {
  Tensor host_grads = Tensor::on_host(MemCategory::grads, n, storage_dtype<T>(), Fill::uninitialized);
  {
    OpScope op(profiler_, op_names::kOffloadGradsToHost);
    current_backend().copy_to_host(host_grads.as<T>(), grads, n * sizeof(T));
  }
  update(s, params, host_grads.as<T>());
  host_grads.release();
  Tensor host_params = Tensor::on_host(MemCategory::params, n, storage_dtype<T>(), Fill::uninitialized);
  if constexpr (std::is_same_v<T, float>) std::copy_n(s.master.data(), n, host_params.as<T>());
  else store_rounded(s.master.data(), host_params.as<T>(), n);
  OpScope op(profiler_, op_names::kOffloadParamsToGpu);
  current_backend().copy_to_device(params, host_params.as<T>(), n * sizeof(T));
}

// The swap file holds each shard's master, m and v (v: Adam only) back to back from its
// offset: DeepSpeed's optimizer swapper keeps a file per state tensor, one read and one write
// per state per step alike.
void ShardedOptimizer::swap_out_states(bool timed) {
  OpScope op(timed ? profiler_ : nullptr, op_names::kOffloadNvmeWrite);
  for (BlockShard& s : shards_) {
    std::int64_t at = s.swap_offset;
    for (Tensor* t : {&s.master, &s.m, &s.v}) {
      if (t->size() == 0) continue;
      swap_->write(at, t->data(), t->bytes());
      at += static_cast<std::int64_t>(t->bytes());
      t->release();
    }
  }
}

void ShardedOptimizer::swap_in_states(bool timed) {
  OpScope op(timed ? profiler_ : nullptr, op_names::kOffloadNvmeRead);
  const bool adam = c_.training.optimizer == Optimizer::adam;
  for (BlockShard& s : shards_) {
    std::int64_t at = s.swap_offset;
    for (Tensor* t : {&s.master, &s.m, &s.v}) {
      if (t == &s.v && !adam) continue;
      *t = Tensor::on_host(MemCategory::optimizer, s.hi - s.lo, Dtype::fp32, Fill::uninitialized);
      swap_->read(at, t->data(), t->bytes());
      at += static_cast<std::int64_t>(t->bytes());
    }
  }
}

void ShardedOptimizer::step() {
  ++updates_;
  if (swap_) swap_in_states();
  with_storage(storage(c_), [&]<class T>() {
    for (BlockShard& s : shards_) {
      std::size_t n = 0;
      const T* grads = reduced_grads<T>(s, n);
      T* params = shard_params_ ? s.param_shard.as<T>() : s.block->params.as<T>() + s.lo;
      if (offload_) offloaded_update(s, params, grads, n);
      else update(s, params, grads);
    }
  });
  if (swap_) swap_out_states();
}

void ShardedOptimizer::share_params() {
  // ZeRO 1/2: the shares were stepped apart; ZeRO 3 keeps only its shard, ZeRO 0 stepped all
  if (!shard_optimizer_ || shard_params_) return;
  // everyone gets everyone's updated share, in place in the parameter buffer
  // (Megatron's distributed optimizer all-gathers into its param buffer)
  OpScope op(profiler_, op_names::kDpParamGather);
  with_storage(storage(c_), [&]<class T>() {
    for (BlockShard& s : shards_) {
      if (s.group->size() == 1) continue;
      T* params = s.block->params.as<T>();
      s.group->all_gather(params + s.lo, params + s.begin, s.hi - s.lo);
    }
  });
}

template <class T>
void ShardedOptimizer::gather_params(BlockShard& s, T* full) {
  if (s.group->size() > 1) s.group->all_gather(s.param_shard.as<T>(), full + s.begin, s.hi - s.lo);
  else current_backend().copy_on_device(full + s.begin, s.param_shard.as<T>(), s.param_shard.bytes());
}

bool ShardedOptimizer::idle(const Bucket& b) {
  for (int i : b.shards)
    if (users_[shards_[i].block] > 0) return false;
  return true;
}

void ShardedOptimizer::retire(Bucket& b) {
  if (b.grads) {
    OpScope op(profiler_, op_names::kDpGradReduce);
    for (int i : b.shards)
      with_storage(storage(c_), [&]<class T>() {
        ParamBlock& block = *shards_[i].block;
        if (sp_ && first_of_block(i)) all_reduce_sequence_parallel_grads(block, block.grads.as<T>(), tp_);
        reduce_scatter_into_shard<T>(shards_[i]);
      });
    for (int i : b.shards) shards_[i].block->grads.release();
    b.grads = false;
  }
  if (b.gathered) {
    for (int i : b.shards) shards_[i].block->params.release();
    b.gathered = false;
  }
}

// One segment of a retiring bucket (its block's SP-partial grads already summed over TP):
// its grads reduce-scattered over its group into this rank's shard.
template <class T>
void ShardedOptimizer::reduce_scatter_into_shard(BlockShard& s) {
  ParamBlock& block = *s.block;
  // what earlier micro-batches reduced joins this rank's own segment of the bucket
  // (no other rank adds to that segment), so the reduce-scatter writes the running
  // sum straight into the shard, as Megatron's into its buffer: no temporary
  const std::size_t share = s.hi - s.lo;
  // (raw pointers: Tensor's operator[] calls data() per element, 1.55 ms here for a
  // 1.5 MiB shard that the loop adds in 0.2)
  T* mine = block.grads.as<T>() + s.lo;
  if (s.replicas) return reduce_over_replicas_into_shard<T>(s);
  // mine += earlier in fp32, one rounding: the residual add's kernel
  current_backend().kernels().residual_forward(mine, s.grad_shard.as<T>(), nullptr, mine, 1, static_cast<int>(share));
  if (s.group->size() > 1) s.group->reduce_scatter(block.grads.as<T>() + s.begin, s.grad_shard.as<T>(), share);
  else current_backend().copy_on_device(s.grad_shard.as<T>(), mine, share * sizeof(T));
}

// Hybrid sharding (FSDP2's foreach_reduce under HSDP): this micro-batch's grads reduce-scattered
// over the shard group, in place into this rank's own segment, that all-reduced over the
// replicas, then added to what earlier micro-batches left in the shard (FSDP2 accumulates the
// reduced shard into the sharded grad). Earlier sums join after the all-reduce, each once.
template <class T>
void ShardedOptimizer::reduce_over_replicas_into_shard(BlockShard& s) {
  ParamBlock& block = *s.block;
  const std::size_t share = s.hi - s.lo;
  T* mine = block.grads.as<T>() + s.lo;
  if (s.group->size() > 1) s.group->reduce_scatter(block.grads.as<T>() + s.begin, mine, share);
  s.replicas->all_reduce(mine, share);
  // shard = earlier + mine in fp32, one rounding: the residual add's kernel
  current_backend().kernels().residual_forward(s.grad_shard.as<T>(), mine, nullptr, s.grad_shard.as<T>(), 1,
                                               static_cast<int>(share));
}

void ShardedOptimizer::retire_idle_except(int keep_a, int keep_b) {
  for (int k = 0; k < static_cast<int>(buckets_.size()); ++k)
    if (k != keep_a && k != keep_b && (buckets_[k].grads || buckets_[k].gathered) && idle(buckets_[k]))
      retire(buckets_[k]);
}

void ShardedOptimizer::acquire(ParamBlock& block, bool backward) {
  if (!shard_grads_) return;
  const int b = bucket_of_[shard_index(block)];
  // the pass's next bucket: backward runs the blocks last to first (bucket 0 first)
  const int next = backward ? b + 1 : b - 1;
  const bool has_next = next >= 0 && next < static_cast<int>(buckets_.size()) && !used_[next];
  retire_idle_except(b, has_next ? next : b);
  ++users_[&block];
  used_[b] = true;
  auto gather = [this](Bucket& k) {
    OpScope op(profiler_, op_names::kDpParamGather);
    for (int i : k.shards) {
      ParamBlock& p = *shards_[i].block;
      if (first_of_block(i)) p.params = Tensor(MemCategory::buffers, p.flat_size(), storage(c_));
      with_storage(storage(c_), [&]<class T>() { gather_params(shards_[i], p.params.as<T>()); });
    }
    k.gathered = true;
  };
  Bucket& k = buckets_[b];
  if (shard_params_ && !k.gathered) gather(k);
  if (shard_params_ && has_next && !buckets_[next].gathered) gather(buckets_[next]);  // prefetch
  if (backward && !k.grads) {
    for (int i : k.shards)
      if (first_of_block(i))
        shards_[i].block->grads = Tensor(MemCategory::buffers, covered(*shards_[i].block), storage(c_));
    k.grads = true;
  }
}

void ShardedOptimizer::release(ParamBlock& block, bool /*backward*/) {
  if (!shard_grads_) return;
  --users_[&block];  // the bucket goes when the pass moves on (acquire) or ends (pass_done)
}

void ShardedOptimizer::pass_done(bool /*backward*/) {
  if (!shard_grads_) return;
  for (Bucket& b : buckets_)
    if (idle(b)) retire(b);
  std::fill(used_.begin(), used_.end(), false);
}

std::vector<float> ShardedOptimizer::gathered_params(ParamBlock& block) {
  return with_storage(storage(c_), [&]<class T>() {
    Tensor full;
    const T* values = block.params.as<T>();
    if (shard_params_) {
      full = Tensor(MemCategory::buffers, block.flat_size(), storage(c_));
      for (BlockShard& s : shards_)
        if (s.block == &block) gather_params(s, full.as<T>());
      values = full.as<T>();
    }
    std::vector<float> out(block.flat_size());  // padding too: an expert segment lies past it
    HostView<const T> host(current_backend(), values, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = kernels::to_float(host.get()[i]);
    return out;
  });
}

namespace {

// fp32 tensors as F32, 16-bit ones as their bit patterns (BF16 / F16).
void save_tensor(TensorFile& file, const std::string& name, const Tensor& t) {
  if (t.size() == 0) return;
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(t.size())};
  // the states on the device are read through host staging (checkpoints through the host)
  HostView<const unsigned char> bytes(current_backend(), static_cast<const unsigned char*>(t.raw()), t.bytes());
  if (t.dtype() == Dtype::fp32) file.add_f32(name, shape, reinterpret_cast<const float*>(bytes.get()));
  else file.add_u16(name, t.dtype(), shape, reinterpret_cast<const std::uint16_t*>(bytes.get()));
}

// Copies the stored values into t; the sizes and types must agree (same plan, same rank).
void load_tensor(const TensorFile& file, const std::string& name, Tensor& t) {
  if (t.size() == 0) return;
  const StoredTensor& stored = file.at(name);
  const std::size_t n = stored.data.size() / storage_bytes(stored.dtype);
  if (stored.dtype != t.dtype() || n != t.size())
    throw CheckpointError("checkpoint tensor '" + name + "' has " + std::to_string(n) + " " +
                          std::string(to_string(stored.dtype)) + " values, this rank holds " + std::to_string(t.size()) +
                          " " + std::string(to_string(t.dtype())) + ": was it written by another plan?");
  if (current_backend().host_must_stage(t.raw())) current_backend().copy_to_device(t.raw(), stored.data.data(), t.bytes());
  else std::memcpy(t.raw(), stored.data.data(), t.bytes());  // both little-endian element bytes
}

}  // namespace

// A segment's tensors are named after its block, the expert segment's with ".experts"
// ("layer1.experts.adam_m"): checkpoint_merge.cpp reads them by these names.
std::string ShardedOptimizer::state_name(const BlockShard& s, const std::string& suffix) const {
  return s.block->name() + (s.experts ? ".experts" : "") + suffix;
}

void ShardedOptimizer::save_state(TensorFile& file) {
  if (swap_) swap_in_states(false);
  for (int i = 0; i < static_cast<int>(shards_.size()); ++i) {
    BlockShard& s = shards_[i];
    if (shard_params_) save_tensor(file, state_name(s, ".params"), s.param_shard);
    else if (first_of_block(i)) save_tensor(file, s.block->name() + ".params", s.block->params);  // whole
    save_tensor(file, state_name(s, ".master"), s.master);
    save_tensor(file, state_name(s, ".adam_m"), s.m);
    save_tensor(file, state_name(s, ".adam_v"), s.v);
  }
  if (swap_) swap_out_states(false);
  file.metadata()["twinsim.optimizer_updates"] = std::to_string(updates_);
}

void ShardedOptimizer::load_state(const TensorFile& file) {
  if (swap_) swap_in_states(false);  // the buffers the checkpoint's states load into
  for (int i = 0; i < static_cast<int>(shards_.size()); ++i) {
    BlockShard& s = shards_[i];
    if (shard_params_) load_tensor(file, state_name(s, ".params"), s.param_shard);
    else if (first_of_block(i)) load_tensor(file, s.block->name() + ".params", s.block->params);
    load_tensor(file, state_name(s, ".master"), s.master);
    load_tensor(file, state_name(s, ".adam_m"), s.m);
    load_tensor(file, state_name(s, ".adam_v"), s.v);
  }
  if (swap_) swap_out_states(false);
  const auto it = file.metadata().find("twinsim.optimizer_updates");
  if (it == file.metadata().end()) throw CheckpointError("checkpoint has no twinsim.optimizer_updates");
  updates_ = std::stoi(it->second);
}

}  // namespace twinsim::exec
