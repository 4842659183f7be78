#pragma once
// Parameters of one model piece (a layer, the embedding, the head) in one flat buffer,
// with a flat gradient buffer beside it, as Megatron-core's DDP keeps contiguous grad
// buffers: data parallelism and ZeRO then reduce and shard whole buffers.
//
// Initialisation is independent of the parallel plan: each FULL weight matrix is drawn
// from a generator seeded by (seed, parameter name), and each rank keeps its shard, so
// every plan starts from the same model as the single-rank run.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/model/tensor.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

enum class Shard { none, rows, cols };  // how tensor parallelism splits the full matrix
enum class Init { normal, zeros, ones };

struct ParamSpec {
  std::string name;  // global and plan-independent: "layer3.attn.q.weight"
  std::int64_t rows = 1, cols = 1;  // full, unsharded shape (a vector is 1 x n)
  Shard shard = Shard::none;
  Init init = Init::normal;
  float std = 0.02f;
  // With sequence parallelism a replicated parameter used on a token shard (norms,
  // biases added outside the TP region) gets a partial grad on each TP rank, summed
  // over the TP group (Korthikanti et al. 2022, §4.2.2; Megatron _allreduce_layernorm_grads).
  bool sequence_parallel_grad = false;
  bool weight_decay = true;  // Megatron: no decay on biases and norm weights
  // A routed expert's matrix: under expert parallelism only its owner holds it, and its
  // grad is summed over the expert-data-parallel group instead of the data-parallel one.
  bool expert = false;
  // LoRA fine-tuning (training.lora): the base model is frozen, only the adapters train;
  // the optimizer steps and the gradient norm counts trainable parameters only.
  bool trainable = true;
  // How many ways tensor parallelism splits it (rows or cols): 0 is the plan's tp. A routed
  // expert's matrix under an expert TP of its own (plan.expert_tp, which divides plan.tp in
  // the executor) is split expert_tp ways, TP rank r holding shard r % expert_tp.
  int shard_ways = 0;
};

struct ParamSlot {
  ParamSpec spec;
  std::size_t offset = 0;  // in the block's flat buffers
  std::size_t count = 0;   // elements on this rank
};

// Where a block's parameters lie in its flat buffers: each slot's offset, in the specs'
// order, the whole padded to a multiple of `pad_multiple` so that ZeRO splits it evenly over
// the DP ranks. With `expert_pad_multiple` > 0 (expert parallelism) the routed experts'
// matrices (ParamSpec::expert) form a segment of their own after the others', padded to a
// multiple of it (the expert-data-parallel degree), as Megatron-core keeps expert
// parameters in buffers of their own: each segment is then reduced and sharded over its
// group. With frozen parameters (training.lora's base) the trainable ones come first, padded
// to `pad_multiple`: the gradient buffer is that prefix [0, grads) alone, and data parallelism
// and ZeRO reduce, shard and clip it (Megatron-core's DDP keeps buffers for parameters with
// requires_grad only). ParamBlock, the checkpoint merge and the memory estimate all lay blocks
// out here.
struct FlatLayout {
  std::vector<std::size_t> offsets;  // per spec
  std::size_t used = 0;              // elements without the padding
  std::size_t experts_begin = 0;     // the expert segment [experts_begin, flat); = flat without one
  std::size_t grads = 0;             // the gradient buffer [0, grads): = flat without a frozen spec
  std::size_t flat = 0;              // padded size
};
FlatLayout flat_layout(const std::vector<ParamSpec>& specs, int tp, int pad_multiple, int expert_pad_multiple = 0);

class ParamBlock {
 public:
  // pad_multiple, expert_pad_multiple: flat_layout's; storage: the type of the params and
  // grads (fp32, bf16 or fp16)
  ParamBlock(std::string name, std::vector<ParamSpec> specs, int tp, int tp_rank, int pad_multiple = 1,
             Dtype storage = Dtype::fp32, int expert_pad_multiple = 0);

  const std::string& name() const { return name_; }
  const std::vector<ParamSlot>& slots() const { return slots_; }
  std::size_t flat_size() const { return flat_size_; }
  std::size_t used_size() const { return used_size_; }  // without the padding
  // The gradient buffer's size: the trainable parameters' prefix (flat_layout), = flat_size()
  // unless some are frozen.
  std::size_t grad_size() const { return grad_size_; }
  // The expert segment [experts_begin(), flat_size()) (flat_layout); empty without one.
  std::size_t experts_begin() const { return experts_begin_; }

  // Fills the params with the plan-independent initialisation for `seed` (rounded to
  // the storage type).
  void initialize(std::uint64_t seed);
  int index_of(const std::string& param_name) const;  // throws when absent

  Dtype storage() const { return storage_; }
  // One parameter's values or grad, in the storage type T (float unless mixed precision);
  // slot -1 (a parameter this model does not have, e.g. a bias) gives nullptr, and so does the
  // grad of a frozen parameter (it has no storage).
  template <class T = float>
  T* param(int slot) {
    return slot < 0 ? nullptr : params.as<T>() + slots_[slot].offset;
  }
  template <class T = float>
  T* grad(int slot) {
    return slot < 0 || !slots_[slot].spec.trainable ? nullptr : grads.as<T>() + slots_[slot].offset;
  }

  Tensor params;  // flat; may be released and regathered under ZeRO 3
  Tensor grads;   // grad_size(); released under ZeRO 2/3 outside the backward pass

 private:
  std::string name_;
  std::vector<ParamSlot> slots_;
  std::size_t used_size_ = 0;
  std::size_t experts_begin_ = 0;
  std::size_t grad_size_ = 0;
  std::size_t flat_size_ = 0;
  int tp_ = 1, tp_rank_ = 0;
  Dtype storage_ = Dtype::fp32;
};

// The full matrix of a parameter, row-major rows x cols, as every plan initialises it.
std::vector<float> full_initial_value(const ParamSpec& spec, std::uint64_t seed);
// The number of shards of `spec` and which one TP rank `tp_rank` holds (ParamSpec::shard_ways).
int shard_ways(const ParamSpec& spec, int tp);
// This rank's shard of a full matrix, and how many values it has.
std::vector<float> take_shard(const std::vector<float>& full, const ParamSpec& spec, int tp, int tp_rank);
// The inverse: writes TP rank `tp_rank`'s shard into the full matrix (a replicated
// parameter: rank 0's copy).
void put_shard(const float* shard, const ParamSpec& spec, int tp, int tp_rank, std::vector<float>& full);
std::int64_t shard_count(const ParamSpec& spec, int tp);
// The full parameter's shape as a checkpoint stores it: [rows, cols], a vector (rows 1) [cols].
std::vector<std::int64_t> full_shape(const ParamSpec& spec);

// Whether TP rank `tp_rank` counts `slot` of `block` when each parameter of the model is to
// be counted once (parameter totals, the global gradient norm): TP-split ones on every
// rank, replicated ones on TP rank 0, and the last stage's copy of a tied embedding
// ("head.output") never.
inline bool counted_once(const ParamBlock& block, const ParamSlot& slot, bool tied_embeddings, int tp_rank) {
  if (tied_embeddings && block.name() == op_names::kHeadOutput) return false;
  return slot.spec.shard != Shard::none || tp_rank == 0;
}

}  // namespace twinsim::exec
