#pragma once
// The optimizer over this rank's blocks, with the ZeRO stages of Rajbhandari et al. 2020
// ("ZeRO", §5, Fig. 1) over the data-parallel group of size N_d:
//   0: every rank keeps all optimizer states and steps all parameters after an
//      all-reduce of the grads (plain data parallelism);
//   1: optimizer states sharded: each rank steps its 1/N_d of every flat block, then
//      the updated parameters are all-gathered (Megatron's distributed optimizer);
//   2: grads sharded too: a reduce-scatter leaves each rank only its grads' share;
//   3: parameters sharded too: the full block exists only while it is used, gathered
//      before each forward/backward and freed after.
// From stage 2 on the unsharded grads exist bucket by bucket: a bucket is Megatron-core
// DDP's (max(40M, 1M x dp) parameters of consecutive blocks in backward order; the whole
// stage without overlapped reduction), its grads allocated when its first block's
// backward starts and reduce-scattered into the shards (and freed) once the bucket's
// blocks are done, every micro-batch, as DeepSpeed's ZeRO-2 reduces its buckets every
// backward. ZeRO 3 gathers parameters by the same buckets, the one in use and the next
// one in the pass's order (prefetched), and frees a bucket once the pass has moved on.
// Gathered parameters and unsharded grads are communication buckets: `buffers`.
// With bf16/fp16 storage the params and grads (and every copy of them here) are 16-bit;
// the optimizer keeps fp32 master weights of its share (Micikevicius et al. 2018 §3.1)
// and writes them back rounded.
#include <map>
#include <memory>
#include <vector>

#include "exec/model/tensor.hpp"
#include "exec/train/grad_compression.hpp"
#include "exec/train/powersgd.hpp"
#include "exec/model/transformer.hpp"
#include "exec/runtime/checkpoint.hpp"
#include "exec/runtime/communicator.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/runtime/swap_file.hpp"
#include "exec/train/train_config.hpp"

namespace twinsim::exec {

// One segment of a block's flat buffers and this rank's share of it: the whole block, or
// under expert parallelism its non-expert and expert segments apart (flat_layout), each
// reduced and sharded over its own group.
struct BlockShard {
  ParamBlock* block = nullptr;
  Communicator* group = nullptr;  // the data-parallel group (its shard group), or the expert-data-parallel one
  // hybrid sharding (plan.dp_replicate): the ranks holding this same share in the other shard
  // groups, over which the share's reduced grads are summed; nullptr without it
  Communicator* replicas = nullptr;
  bool experts = false;            // the block's expert segment
  std::size_t begin = 0, end = 0;  // the segment in the block's flat buffers
  std::size_t lo = 0, hi = 0;      // this rank's range of it (the whole segment below ZeRO 1)
  // The optimizer's states hold the trainable elements of [lo, hi) only, back to back in the
  // slots' order (optimizer_spans; LoRA's frozen base has none): all of [lo, hi) without a
  // frozen slot in it (`compact` false), the state index then the share's.
  struct Span {
    std::size_t at = 0, n = 0;  // from lo
  };
  std::vector<Span> spans;
  bool compact = false;
  Tensor master;                  // fp32 master weights of the spans (16-bit storage, or any with offload: on the host)
  Tensor m, v;                    // AdamW moments of the spans
  std::int64_t swap_offset = -1;  // plan.offload_device: nvme: master, m, v on the swap file from here
  Tensor grad_shard;           // ZeRO 2/3: the reduced grads of [lo, hi), storage type
  Tensor param_shard;          // ZeRO 3: the only persistent copy of [lo, hi), storage type
  GradCompressor compressor;   // plan.gradient_compression (ZeRO 0-1, dp > 1): the block's residual
  PowerSgdReducer powersgd;    // ... powersgd: its factors and residual
};

// The DDP bucket in parameters, the simulator's (models/plan.hpp dp_bucket_params: the
// plan's dp_bucket_size or Megatron-core's default); 0 = no limit (no overlapped reduction).
std::int64_t ddp_bucket_elements(const TrainConfig& config);

// The padding multiple of the blocks' expert segments (flat_layout): the expert-data-parallel
// degree under expert parallelism, 0 (no segment of their own) without it.
int expert_pad_multiple(const Plan& plan);

// The padding multiple of the blocks' dense segments: the data-parallel degree ZeRO splits them
// over, under hybrid sharding (plan.dp_replicate) one shard group's (the executor runs cp 1).
int dense_pad_multiple(const Plan& plan);

class ShardedOptimizer final : public BlockHooks {
 public:
  // tp and sequence_parallel: under ZeRO 2/3 the partial grads of replicated parameters
  // are summed over TP before the reduce-scatter (see data_parallel.hpp). The profiler,
  // if any, times the buckets' reduce-scatters as dp.grad_reduce.
  // expert_dp (expert parallelism): the ranks that hold the same experts (Megatron-core's
  // expert-data-parallel group); the blocks' expert segments are reduced and sharded over
  // it, everything else over `dp`.
  // replicas (hybrid sharding, plan.dp_replicate > 1): `dp` is then one shard group
  // (ProcessGroups::dp_shard) and `replicas` the ranks holding the same shard
  // (ProcessGroups::dp_replicate): after each reduce-scatter of the dense grads over `dp`
  // the shard is all-reduced over `replicas` (FSDP2's HSDP foreach_reduce, Megatron-core's
  // distributed-optimizer instances).
  ShardedOptimizer(const TrainConfig& config, std::vector<ParamBlock*> blocks, Communicator& dp, Communicator& tp,
                   bool sequence_parallel, Profiler* profiler = nullptr, Communicator* expert_dp = nullptr,
                   Communicator* replicas = nullptr);

  void begin_step();    // zero the grads
  void reduce_grads();  // ZeRO 0: all-reduce; 1: reduce-scatter; 2/3: done bucket by bucket in backward
  // The reduced grads this rank's optimizer reads for `block` (for overflow checks,
  // unscaling and the tied-embedding sum under ZeRO 3), and their count; T is the
  // storage type (float, kernels::bf16 or kernels::fp16).
  // A block with an expert segment has two shares: not asked for (the tied embedding is asked).
  template <class T>
  T* reduced_grads(const ParamBlock& block, std::size_t& count) {
    return reduced_grads<T>(shard_of(block), count);
  }
  bool local_overflow();
  // The first parameter whose reduced gradient on this rank holds a NaN or an Inf, by
  // name ("layer0.attn.q.weight"); "" when every one is finite.
  std::string first_non_finite_grad();
  void scale_grads(float factor);
  // This rank's part of the squared global gradient norm, each parameter counted once over
  // the world: TP-replicated ones on TP rank 0, under ZeRO 0 (every DP rank holds all the
  // reduced grads) on DP rank 0, the last stage's tied copy of the embedding never.
  double local_grad_square_sum();
  void step();          // update this rank's share
  void share_params();  // ZeRO 1/2: all-gather the updated shares, timed as dp.param_gather

  // ZeRO 2/3 hooks (no-ops below stage 2).
  void acquire(ParamBlock& block, bool backward) override;
  void release(ParamBlock& block, bool backward) override;
  void pass_done(bool backward) override;
  int buckets() const { return static_cast<int>(buckets_.size()); }

  // The block's parameters on this rank as the model uses them (its TP shard); a
  // collective over the DP group under ZeRO 3.
  std::vector<float> gathered_params(ParamBlock& block);

  // This rank's persistent state (the parameters it holds, masters, moments, update
  // count) into a checkpoint, and back. Restoring needs the same plan and rank.
  void save_state(TensorFile& file);
  void load_state(const TensorFile& file);

 private:
  const TrainConfig& c_;
  Communicator& dp_;
  Communicator& tp_;
  Communicator* replicas_;  // hybrid sharding's replicate group, or nullptr
  bool sp_;
  // what the ZeRO stage shards over the DP group (models/plan.hpp): optimizer states
  // from stage 1, gradients from 2, parameters at 3
  bool shard_optimizer_, shard_grads_, shard_params_;
  bool offload_;  // plan.offload_optimizer: the update's state on the host
  // plan.offload_device: nvme (ZeRO-Infinity): between steps the state lives on this rank's
  // swap file; the step reads all of it into host buffers (one sub-group: DeepSpeed's
  // sub_group_size is 1e9 values), updates it and writes it back
  std::unique_ptr<SwapFile> swap_;
  int updates_ = 0;
  Profiler* profiler_;
  std::vector<BlockShard> shards_;
  std::map<const ParamBlock*, int> users_;

  struct Bucket {
    std::vector<int> shards;  // indices into shards_, in the blocks' order
    bool gathered = false;    // ZeRO 3: its blocks' parameters are here
    bool grads = false;       // its blocks' unsharded grads are here
  };
  std::vector<Bucket> buckets_;  // backward order: bucket 0 holds the last blocks
  std::vector<int> bucket_of_;   // per shard
  std::vector<bool> used_;       // per bucket: acquired in this pass (no prefetch back)

  // plan.offload_device: nvme: the shards' states onto the swap file (released from the
  // host), and back into host buffers; timed as their ops inside a step (not at set-up or
  // around a checkpoint)
  void swap_out_states(bool timed = true);
  void swap_in_states(bool timed = true);
  // one segment [begin, end) of `b`, reduced and sharded over `group`
  void add_shard(ParamBlock* b, Communicator& group, bool experts, std::size_t begin, std::size_t end);
  BlockShard& shard_of(const ParamBlock& block);
  int shard_index(const ParamBlock& block) const;  // the block's first shard
  // The part of a block its segments cover: the gradient buffer (ParamBlock::grad_size, the
  // trainable prefix under LoRA); under ZeRO 3, whose shares hold the parameters too, the whole
  // flat buffer (a frozen base's part then reduces zeros, as before LoRA had a grad prefix).
  std::size_t covered(const ParamBlock& block) const;
  bool first_of_block(int shard) const { return shard == 0 || shards_[shard - 1].block != shards_[shard].block; }
  template <class T>
  T* reduced_grads(BlockShard& s, std::size_t& count) {
    count = s.hi - s.lo;
    return shard_grads_ ? s.grad_shard.as<T>() : s.block->grads.as<T>() + s.lo;
  }
  std::string state_name(const BlockShard& s, const std::string& suffix) const;
  bool idle(const Bucket& b);
  void retire(Bucket& b);    // reduce-scatter its grads (if any), timed, and free what it holds
  void retire_idle_except(int keep_a, int keep_b);
  template <class T>
  void gather_params(BlockShard& s, T* full);
  template <class T>
  void reduce_scatter_into_shard(BlockShard& s);
  template <class T>
  void reduce_over_replicas_into_shard(BlockShard& s);  // hybrid sharding's reduction
  template <class T>
  void update(BlockShard& s, T* params, const T* grads);
  template <class T>
  void offloaded_update(BlockShard& s, T* params, const T* grads, std::size_t n);
};

}  // namespace twinsim::exec
