#include "sim/memory/reserved_memory.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

namespace {

// Builds the event list: each allocation gets the next tensor id.
class StepTrace {
 public:
  int allocate(std::int64_t bytes, AllocStream stream = AllocStream::compute) {
    events_.push_back({true, next_, bytes, stream});
    return next_++;
  }
  void free(int tensor) { events_.push_back({false, tensor, 0}); }
  void free_all(std::vector<int>& tensors) {
    for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) free(*it);
    tensors.clear();
  }
  std::vector<AllocationEvent> take() { return std::move(events_); }

 private:
  std::vector<AllocationEvent> events_;
  int next_ = 0;
};

// The sizes a stage's step allocates, per layer unless said otherwise.
struct StepShape {
  std::int64_t layers = 1, in_flight = 1;
  std::int64_t chunk_layers = 1;  // the layers one micro-batch's pass through the stage crosses (a chunk's, interleaved)
  std::int64_t params = 0, grads = 0, optimizer = 0;  // the stage's, split evenly over its layers
  std::int64_t gathered = 0, reduce_scatter = 0;      // ZeRO-3 / FSDP's per-layer buffers (0: none)
  // FSDP2's stream pools (StackSpec::fsdp_stream_pools): the all-gather output a layer's
  // gather makes on its stream (0: none), and where the reduce-scatter's buffers and the
  // sharded gradients are made
  std::int64_t all_gather_output = 0;
  AllocStream reduce_stream = AllocStream::compute, grad_stream = AllocStream::compute;
  std::vector<std::int64_t> kept, rebuilt;            // a layer's saved tensors; those recompute brings back
  std::int64_t backward = 0;                          // its backward's working set beyond them
  std::int64_t logits = 0;                            // on the last stage: the loss's logits (0: elsewhere)
  bool eager_loss = false;
  bool vocab_parallel = false;  // TP's loss_parallel
};

std::vector<std::int64_t> saved_sizes(const std::vector<LayerOp>& ops) {
  std::vector<std::int64_t> sizes;
  for (const LayerOp& op : ops)
    for (const SavedTensor& t : op.saved)
      if (t.bytes > 0) sizes.push_back(t.bytes);
  return sizes;
}

StepShape step_shape(const Scenario& sc, int stage, const StageMemory& memory) {
  const TrainingWorkload& t = *sc.training;
  const Plan& plan = sc.plan;
  const MicroBatchShape shape = training_shape(t, sc.stack);
  StepShape s;
  s.layers = std::max<std::int64_t>(1, stage_layers(sc.model, plan, stage).total());
  s.in_flight = std::min<std::int64_t>(64, chunks_in_flight(plan, stage, t.micro_batches(plan.dp)));
  const bool interleaved = plan.schedule == Schedule::interleaved && plan.virtual_stages > 1;
  const std::int64_t chunks = interleaved ? plan.virtual_stages : plan.schedule == Schedule::dualpipe ? 2 : 1;
  s.chunk_layers = std::max<std::int64_t>(1, s.layers / chunks);
  s.params = memory.breakdown.params / s.layers;
  s.grads = memory.breakdown.grads / s.layers;
  s.optimizer = memory.breakdown.optimizer / s.layers;
  const std::int64_t layer = some_dense_layer(sc.model);
  const std::int64_t layer_params = layer_params_on_gpu(sc.model, plan, false).total();
  const BytesPerParam bytes =
      training_bytes_per_param(t.precision, t.optimizer, sc.stack, optimizer_state_dtypes(plan));
  if (plan.shards_params() && !fsdp_keeps_stage_gathered(plan, sc.stack)) s.gathered = checked_mul(layer_params, bytes.params);
  if (plan.shards_grads()) s.reduce_scatter = checked_mul(layer_params, bytes.grads);
  if (sc.stack.fsdp_stream_pools && plan.shards_params()) {
    s.all_gather_output = checked_mul(layer_params, bytes.params);
    s.reduce_stream = AllocStream::reduce_scatter;
    // foreach_reduce's output is the sharded gradient; kept unsharded under PP, they are autograd's
    if (!fsdp_keeps_stage_gathered(plan, sc.stack)) s.grad_stream = AllocStream::reduce_scatter;
  }
  s.kept = saved_sizes(build_layer_ops(sc.model, layer, plan, shape));
  if (plan.recompute != Recompute::none) {
    Plan none = plan;
    none.recompute = Recompute::none;
    s.rebuilt = saved_sizes(build_layer_ops(sc.model, layer, none, shape));
  }
  s.backward =
      layer_backward_bytes(sc.model, layer, plan, shape) + torch_cp_backward_bytes(sc.model, plan, sc.stack, shape);
  if (stage == plan.pp - 1)
    s.logits = checked_mul(checked_mul(t.micro_batch, t.seq_len) / plan.cp, sc.model.vocab) / plan.tp;
  s.eager_loss = sc.stack.eager_fp32_loss() || sc.stack.hf_modeling();
  s.vocab_parallel = plan.tp > 1;
  return s;
}

// The loss's forward: cross_entropy(logits.float()) keeps log_softmax's fp32 output; the
// 16-bit logits and their fp32 copy go (torchtitan's `del pred`). Else the fp32 logits kept.
int loss_forward(StepTrace& trace, const StepShape& s) {
  if (!s.eager_loss) return trace.allocate(4 * s.logits);
  const int pred = trace.allocate(2 * s.logits), copy = trace.allocate(4 * s.logits);
  if (!s.vocab_parallel) {
    const int out = trace.allocate(4 * s.logits);
    trace.free(copy);
    trace.free(pred);
    return out;
  }
  // loss_parallel's _log_softmax: shifted = x - max, exp(shifted) summed, result = shifted - lse
  const int shifted = trace.allocate(4 * s.logits), exp = trace.allocate(4 * s.logits);
  trace.free(exp);
  const int out = trace.allocate(4 * s.logits);
  trace.free(shifted);
  trace.free(copy);
  trace.free(pred);
  return out;
}

// Its backward: nll_loss's fp32 grad, log_softmax's beside the kept output, then the 16-bit
// logits' grad; the output layer's input grad replaces them. loss_parallel fuses the two into
// (grad_input + exp(x)) * grad_output (activations.hpp, kEagerFp32LossParallelBackwardBytesPerLogit).
void loss_backward(StepTrace& trace, const StepShape& s, int kept) {
  if (s.eager_loss && s.vocab_parallel) {
    const int grad_input = trace.allocate(4 * s.logits), exp = trace.allocate(4 * s.logits);
    const int sum = trace.allocate(4 * s.logits);
    trace.free(exp);
    const int grad = trace.allocate(4 * s.logits);
    trace.free(sum);
    trace.free(grad_input);
    trace.free(kept);
    const int grad16 = trace.allocate(2 * s.logits);
    trace.free(grad);
    kept = grad16;
  } else if (s.eager_loss) {
    const int nll = trace.allocate(4 * s.logits), grad = trace.allocate(4 * s.logits);
    trace.free(nll);
    trace.free(kept);
    const int grad16 = trace.allocate(2 * s.logits);
    trace.free(grad);
    kept = grad16;
  }
  trace.free(kept);
}

// FSDP2's all-gather outputs on their stream. The forward defers each one's free until the
// next layer's gather is made ("Defer free to allow for overlap of this copy-out with next
// all-gather collective", FSDPParamGroup.wait_for_unshard, comm_ctx.all_gather_state): two
// in flight, the last kept past the forward. The backward frees each after its copy-out.
class AllGatherOutputs {
 public:
  explicit AllGatherOutputs(std::int64_t bytes) : bytes_(bytes) {}
  void gather(StepTrace& trace, bool defer_free) {
    if (bytes_ == 0) return;
    const int made = trace.allocate(bytes_, AllocStream::all_gather);
    release(trace);
    if (defer_free) held_ = made;
    else trace.free(made);
  }
  void release(StepTrace& trace) {
    if (held_ >= 0) trace.free(held_);
    held_ = -1;
  }

 private:
  std::int64_t bytes_ = 0;
  int held_ = -1;
};

// One micro-batch's forward through the stage's layers: each gathers its parameters (ZeRO-3;
// under PP with the stage kept gathered, at the step's first micro-batch only), keeps its
// saved tensors and lets the gathered ones go.
void layers_forward(StepTrace& trace, const StepShape& s, std::vector<int>& kept, AllGatherOutputs& outputs,
                    bool gathers) {
  for (std::int64_t l = 0; l < s.chunk_layers; ++l) {
    if (gathers) outputs.gather(trace, true);
    const int gathered = s.gathered > 0 ? trace.allocate(s.gathered) : -1;
    for (std::int64_t bytes : s.kept) kept.push_back(trace.allocate(bytes));
    if (gathered >= 0) trace.free(gathered);
  }
}

// One micro-batch's backward, last layer first: gather, rebuild, the working set, the
// unsharded gradients reduce-scattered into the kept shard.
void layers_backward(StepTrace& trace, const StepShape& s, std::vector<int>& kept, std::vector<int>& grads,
                     AllGatherOutputs& outputs) {
  const std::size_t per_layer = s.kept.size();
  for (std::int64_t l = s.chunk_layers - 1; l >= 0; --l) {
    if (s.gathered > 0) outputs.gather(trace, false);
    const int gathered = s.gathered > 0 ? trace.allocate(s.gathered) : -1;
    std::vector<int> rebuilt;
    for (std::int64_t bytes : s.rebuilt) rebuilt.push_back(trace.allocate(bytes));
    const int working = trace.allocate(s.backward);
    const int unsharded = s.reduce_scatter > 0 ? trace.allocate(s.reduce_scatter, s.reduce_stream) : -1;
    if (grads.size() < static_cast<std::size_t>(s.layers)) grads.push_back(trace.allocate(s.grads, s.grad_stream));
    trace.free(working);
    trace.free_all(rebuilt);
    for (std::size_t i = 0; i < per_layer && !kept.empty(); ++i) {
      trace.free(kept.back());
      kept.pop_back();
    }
    if (unsharded >= 0) trace.free(unsharded);
    if (gathered >= 0) trace.free(gathered);
  }
}

}  // namespace

std::vector<AllocationEvent> training_step_allocations(const Scenario& sc, int stage, const StageMemory& memory) {
  const StepShape s = step_shape(sc, stage, memory);
  StepTrace trace;
  for (std::int64_t l = 0; l < s.layers; ++l) trace.allocate(s.params);  // the (sharded) model
  std::vector<int> optimizer;
  for (int step = 0; step < 2; ++step) {
    std::vector<int> grads;  // zero_grad(set_to_none): made by each step's first backward
    std::vector<std::vector<int>> kept(static_cast<std::size_t>(s.in_flight));
    std::vector<int> loss(static_cast<std::size_t>(s.in_flight), -1);
    AllGatherOutputs outputs(s.all_gather_output);
    for (std::size_t mb = 0; mb < kept.size(); ++mb) {
      layers_forward(trace, s, kept[mb], outputs, s.gathered > 0 || mb == 0);
      if (s.logits > 0) loss[mb] = loss_forward(trace, s);
    }
    for (std::size_t mb = kept.size(); mb-- > 0;) {
      if (loss[mb] >= 0) loss_backward(trace, s, loss[mb]);
      layers_backward(trace, s, kept[mb], grads, outputs);
    }
    outputs.release(trace);
    if (optimizer.empty())  // Adam's states, made at the first step (lazily, per parameter)
      for (std::int64_t l = 0; l < s.layers; ++l) optimizer.push_back(trace.allocate(s.optimizer));
    trace.free_all(grads);
  }
  return trace.take();
}

// Each stream's pool is an allocator of its own; the peaks are of their sums.
AllocatorReplay replay_allocations(const std::vector<AllocationEvent>& events, CachingAllocatorOptions options) {
  std::vector<CachingAllocatorModel> pools(kAllocStreams, CachingAllocatorModel(options));
  std::unordered_map<int, std::pair<AllocStream, CachingAllocatorModel::Handle>> handles;
  AllocatorReplay r;
  for (const AllocationEvent& e : events) {
    if (e.allocate) {
      handles[e.tensor] = {e.stream, pools[static_cast<int>(e.stream)].allocate(e.bytes)};
    } else {
      const auto [stream, handle] = handles.at(e.tensor);
      pools[static_cast<int>(stream)].free(handle);
      handles.erase(e.tensor);
    }
    std::int64_t allocated = 0, reserved = 0;
    for (const CachingAllocatorModel& pool : pools) {
      allocated += pool.allocated_bytes();
      reserved += pool.reserved_bytes();
      r.out_of_memory = r.out_of_memory || pool.out_of_memory();
    }
    r.peak_allocated = std::max(r.peak_allocated, allocated);
    r.peak_reserved = std::max(r.peak_reserved, reserved);
  }
  for (const CachingAllocatorModel& pool : pools) {  // a peak inside one allocation (a release before a reserve)
    r.peak_allocated = std::max(r.peak_allocated, pool.peak_allocated_bytes());
    r.peak_reserved = std::max(r.peak_reserved, pool.peak_reserved_bytes());
  }
  return r;
}

ReservedMemory training_reserved_memory(const Scenario& sc, int stage, const StageMemory& memory) {
  ReservedMemory r;
  const std::int64_t nccl = nccl_buffer_bytes(sc.plan);
  r.outside = kCudaContextBytes + nccl;
  const std::int64_t allocated = memory.peak_bytes - std::min(nccl, memory.breakdown.buffers);
  const std::int64_t room = sc.cluster.gpu.memory_bytes - r.outside;
  const AllocatorReplay replay =
      replay_allocations(training_step_allocations(sc, stage, memory), {sc.stack.expandable_segments, 0});
  const std::int64_t reserved = allocated + std::max<std::int64_t>(0, replay.peak_reserved - replay.peak_allocated);
  r.reserved_peak = std::max(allocated, std::min(reserved, room));
  return r;
}

}  // namespace twinsim
