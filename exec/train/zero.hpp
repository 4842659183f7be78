#pragma once
// The optimizer over this rank's blocks, with the ZeRO stages of Rajbhandari et al. 2020
// ("ZeRO", §5, Fig. 1) over the data-parallel group of size N_d:
//   0: every rank keeps all optimizer states and steps all parameters after an
//      all-reduce of the grads (plain data parallelism);
//   1: optimizer states sharded: each rank steps its 1/N_d of every flat block, then
//      the updated parameters are all-gathered (Megatron's distributed optimizer);
//   2: grads sharded too: a reduce-scatter leaves each rank only its grads' share;
//   3: parameters sharded too: the full block exists only while it is used, gathered
//      before each forward/backward and freed after; grads are reduce-scattered as soon
//      as a block's backward is done.
// With bf16/fp16 storage the optimizer keeps fp32 master weights of its share
// (Micikevicius et al. 2018 §3.1) and writes them back rounded.
#include <map>
#include <vector>

#include "exec/model/tensor.hpp"
#include "exec/model/transformer.hpp"
#include "exec/runtime/checkpoint.hpp"
#include "exec/runtime/communicator.hpp"
#include "exec/train/train_config.hpp"

namespace twinsim::exec {

struct BlockShard {
  ParamBlock* block = nullptr;
  std::size_t lo = 0, hi = 0;  // this rank's range of the block's flat buffers
  Tensor master;               // fp32 master weights of [lo, hi) (16-bit storage only)
  Tensor m, v;                 // AdamW moments of [lo, hi)
  Tensor grad_shard;           // ZeRO 2/3: the reduced grads of [lo, hi)
  Tensor param_shard;          // ZeRO 3: the only persistent copy of [lo, hi)
};

class ShardedOptimizer final : public BlockHooks {
 public:
  // tp and sequence_parallel: under ZeRO 3 the partial grads of replicated parameters
  // are summed over TP before the reduce-scatter (see data_parallel.hpp).
  ShardedOptimizer(const TrainConfig& config, std::vector<ParamBlock*> blocks, Communicator& dp, Communicator& tp,
                   bool sequence_parallel);

  void begin_step();    // zero (or allocate) the grads
  void reduce_grads();  // ZeRO 0/1: all-reduce; 2: reduce-scatter; 3: done block by block
  // The reduced grads this rank's optimizer reads for `block` (for overflow checks,
  // unscaling and the tied-embedding sum under ZeRO 3), and their count.
  float* reduced_grads(const ParamBlock& block, std::size_t& count);
  bool local_overflow();
  void scale_grads(float factor);
  void step();  // update this rank's share and share the new parameters

  // ZeRO 3 hooks (no-ops below stage 3).
  void acquire(ParamBlock& block, bool backward) override;
  void release(ParamBlock& block, bool backward) override;

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
  bool sp_;
  int zero_;
  int updates_ = 0;
  std::vector<BlockShard> shards_;
  std::map<const ParamBlock*, int> param_users_, grad_users_;

  BlockShard& shard_of(const ParamBlock& block);
  void gather_params(BlockShard& s, float* full);
  void update(BlockShard& s, float* params, const float* grads);
};

}  // namespace twinsim::exec
