// The simulated training step against closed forms: FLOP counts (Korthikanti et al.
// 2022 App. A; Narayanan et al. 2021 Eq. 3), pipeline bubbles (Narayanan §2.2), and the
// report's invariants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "models/op_names.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"
#include "sim/training/transfer_bytes.hpp"
#include "sim/training/zero_comm.hpp"
#include "tests/unit/scenario/device_alone.hpp"

namespace twinsim {
namespace {

// A GPT model on a cluster whose network is so fast that communication vanishes, so the
// pipeline's own shape decides the step.
Scenario gpt(const std::vector<std::string>& sets) {
  const std::string text = R"(
model: {layers: 8, hidden: 1024, heads: 16, vocab: 51200, max_seq_len: 2048, bias: false}
cluster:
  gpu: a100-sxm-80gb
  gpus_per_node: 64
  intra_node: {bandwidth_GBps: 1000000, latency_us: 0}
  inter_node: {bandwidth_GBps: 1000000, latency_us: 0, nics_per_node: 8}
training: {seq_len: 2048, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)";
  return test::device_alone(text, sets);
}

TEST(TrainingStep, ModelFlopsMatchKorthikantiAppendixA) {
  // 72 B s l h^2 (1 + s/(6h) + V/(12 l h)): forward + backward, attention and logits
  const Scenario s = gpt({});
  const double B = 16, sq = 2048, l = 8, h = 1024, V = 51200;
  const double expected = 72 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(model_flops_per_step(s) / expected, 1.0, 1e-9);
}

TEST(TrainingStep, FullRecomputeHardwareFlopsMatchNarayananEq3) {
  // 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full activation recomputation
  const TrainingPrediction p = predict_training(gpt({"plan.recompute=full", "plan.flash_attention=false"}));
  const double B = 16, sq = 2048, l = 8, h = 1024, V = 51200;
  const double expected = 96 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(p.hardware_flops / expected, 1.0, 1e-9);
}

TEST(TrainingStep, BreakdownSumsToStepAndNothingIsNegative) {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {}, {"plan.pp=4", "plan.schedule=gpipe"}, {"plan.pp=2", "plan.dp=2", "plan.zero=1"},
           {"plan.tp=2", "plan.sequence_parallel=true", "plan.recompute=full"},
           {"plan.pp=2", "plan.schedule=interleaved", "plan.virtual_stages=2"}}) {
    const TrainingPrediction p = predict_training(gpt(sets));
    EXPECT_NEAR(p.breakdown.sum(), p.step_s, 1e-9 * p.step_s);
    for (double part : {p.breakdown.compute_s, p.breakdown.pp_bubble_s, p.breakdown.dp_comm_exposed_s,
                        p.breakdown.tp_comm_s, p.breakdown.recompute_s})
      EXPECT_GE(part, 0.0);
  }
}

TEST(TrainingStep, PipelineBubbleMatchesNarayanan) {
  // 1F1B and GPipe: bubble = (p - 1) (t_f + t_b); interleaved: divided by v (§2.2.1-2)
  // a small vocabulary keeps the embedding and logits negligible, so stages balance
  const int p = 4, m = 8;
  const double single = predict_training(gpt({"training.global_batch=8", "model.vocab=64"})).step_s;
  const double per_mb_per_stage = single / m / p;  // t_f + t_b of one stage, no bubble
  for (const char* sch : {"plan.schedule=1f1b", "plan.schedule=gpipe"}) {
    const TrainingPrediction pr = predict_training(gpt({"plan.pp=4", "training.global_batch=8", "model.vocab=64", sch}));
    EXPECT_NEAR(pr.step_s, (m + p - 1) * per_mb_per_stage, 0.03 * pr.step_s) << sch;
  }
  const TrainingPrediction il = predict_training(
      gpt({"plan.pp=4", "training.global_batch=8", "model.vocab=64", "plan.schedule=interleaved",
           "plan.virtual_stages=2"}));
  EXPECT_NEAR(il.step_s, (m + (p - 1) / 2.0) * per_mb_per_stage, 0.03 * il.step_s);
}

TEST(TrainingStep, GradientReduceOverlapHidesCommunication) {
  const Scenario base = test::device_alone(R"(
model: gpt2-xl
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 64, micro_batch: 4}
plan: {tp: 1, pp: 1, dp: 16}
)");
  Scenario blocking = base;
  blocking.plan.overlap_grad_reduce = false;
  const TrainingPrediction overlapped = predict_training(base), exposed = predict_training(blocking);
  EXPECT_LT(overlapped.breakdown.dp_comm_exposed_s, exposed.breakdown.dp_comm_exposed_s);
  EXPECT_GT(exposed.breakdown.dp_comm_exposed_s, 0.0);
  EXPECT_LT(overlapped.step_s, exposed.step_s);
}

// gpt2-xl on 8 data-parallel A100s, 2 micro-batches each, with the given ZeRO stage and
// no overlapped DP communication (every DP collective exposed).
Scenario blocking_dp8(int zero) {
  Scenario s = test::device_alone(R"(
model: gpt2-xl
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 64, micro_batch: 4}
plan: {tp: 1, pp: 1, dp: 8, zero: 1, overlap_grad_reduce: false, overlap_param_gather: false}
)");
  s.plan.zero = zero;
  return s;
}

// ZeRO-3 without overlap (Megatron-core: one bucket): every micro-batch all-gathers the
// stage's parameters before its forward and again before its backward and
// reduce-scatters its gradients after the backward, all on the compute stream.
TEST(TrainingStep, Zero3WithoutOverlapGathersTheStageTwiceAndReducesOncePerMicroBatch) {
  Scenario s = blocking_dp8(3);
  const ShardedStageComm z =
      sharded_stage_comm(s.cluster, s.plan, s.stack, s.training->precision, stage_params(s.model, s.plan, 0), {});
  const double m = 64.0 / (4 * 8);  // micro-batches per step
  const double params = static_cast<double>(stage_params_per_gpu(s, 0));
  // bf16 parameters and gradients, 1.56e9 of them: seconds each, not micro
  EXPECT_GT(z.gather_s, params * 2 / (s.cluster.intra_node.bandwidth_Bps * 8));
  EXPECT_GT(z.reduce_s, 0.0);
  const TrainingPrediction p = predict_training(s);
  EXPECT_NEAR(p.breakdown.dp_comm_exposed_s, m * (2 * z.gather_s + z.reduce_s), 1e-9 * p.step_s);
  EXPECT_NEAR(p.breakdown.pp_bubble_s, 0.0, 1e-9 * p.step_s);  // blocking comm is not bubble
  int gathers = -1, reduces = -1;
  for (const OpPrediction& op : p.ops) {
    if (op.name == "dp.param_gather") gathers = op.count;
    if (op.name == "dp.grad_reduce") reduces = op.count;
  }
  EXPECT_EQ(gathers, 2 * m);
  EXPECT_EQ(reduces, m);
  // with overlap the per-layer model applies and none of these whole-stage collectives
  s.plan.overlap_grad_reduce = true;
  EXPECT_EQ(sharded_stage_comm(s.cluster, s.plan, s.stack, s.training->precision, stage_params(s.model, s.plan, 0), {}).gather_s, 0.0);
}

// plan.dp_bucket_size sets how many DDP buckets a step reduces (each closes once it holds
// the size, in backward order; the engine closes them at layer boundaries): gpt2-xl's 48
// layers of 30,740,800 parameters (12 x 1600^2 + 13 x 1600) on each of 8 DP ranks.
TEST(TrainingStep, BucketSizeSetsTheDpReduceCount) {
  Scenario s = blocking_dp8(1);
  s.plan.overlap_grad_reduce = true;
  auto reduces = [&](int bucket) {
    s.plan.dp_bucket_size = bucket;
    for (const OpPrediction& op : predict_training(s).ops)
      if (op.name == "dp.grad_reduce") return op.count;
    return -1;
  };
  EXPECT_EQ(reduces(0), 24);            // Megatron's 40M: two layers a bucket
  EXPECT_EQ(reduces(1), 48);            // a layer a bucket
  EXPECT_EQ(reduces(100'000'000), 12);  // four layers (123M) a bucket
}

// Interleaved, each of a stage's chunks gathers and reduces its own parameters, in its
// own passes: chunk 0 of stage 0 holds the embedding, the last chunk of the last stage
// the head; the chunks' parameters add up to the stage's; and the blocking DP time is
// every micro-batch's gathers and reduces of every chunk.
TEST(TrainingStep, Zero3WithoutOverlapUnderInterleavingGathersEachChunk) {
  Scenario s = test::device_alone(R"(
model: gpt2-xl
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 64, micro_batch: 4}
plan: {tp: 1, pp: 2, dp: 4, zero: 3, overlap_grad_reduce: false, overlap_param_gather: false,
       schedule: interleaved, virtual_stages: 2}
)");
  const ModelSpec& model = s.model;
  const std::int64_t layer = layer_params_on_gpu(model, s.plan, false).total();  // 12 layers per chunk
  for (int stage : {0, 1}) {
    const std::int64_t a = chunk_params_per_gpu(model, s.plan, stage, 0).total();
    const std::int64_t b = chunk_params_per_gpu(model, s.plan, stage, 1).total();
    EXPECT_EQ(a + b, stage_params_per_gpu(s, stage)) << stage;
    EXPECT_EQ(stage == 0 ? b : a, 12 * layer) << stage;  // the chunk without embedding or head
    EXPECT_GT(stage == 0 ? a : b, 12 * layer) << stage;
  }
  const double m = 64.0 / (4 * 4);
  double per_micro_batch = 0;  // stage 0: its two chunks' forward and backward gathers and reduce
  for (int chunk : {0, 1}) {
    const ShardedStageComm z =
        sharded_stage_comm(s.cluster, s.plan, s.stack, s.training->precision, chunk_params_per_gpu(model, s.plan, 0, chunk), {});
    per_micro_batch += 2 * z.gather_s + z.reduce_s;
  }
  const TrainingPrediction p = predict_training(s);
  EXPECT_NEAR(p.stage_breakdowns[0].dp_comm_exposed_s, m * per_micro_batch, 1e-9 * p.step_s);
}

// ZeRO 0-2 without overlap: the stage is one bucket, reduced once after the backward (ZeRO
// 0/1) or after every micro-batch's backward (ZeRO-2, whose grads are sharded); ZeRO 1/2
// then all-gather the updated shards. The op table lists both under the
// executor's names (exec/train/zero.cpp), and they are the whole exposed DP time.
TEST(TrainingStep, DataParallelOpsAreTheExposedCollectives) {
  Scenario s = blocking_dp8(1);
  auto dp_op = [](const TrainingPrediction& p, const std::string& name) {
    for (const OpPrediction& op : p.ops)
      if (op.name == name) return op;
    return OpPrediction{name, 0, 0};
  };
  const TrainingPrediction sharded = predict_training(s);
  const OpPrediction reduce = dp_op(sharded, "dp.grad_reduce"), gather = dp_op(sharded, "dp.param_gather");
  EXPECT_EQ(reduce.count, 1);
  EXPECT_EQ(gather.count, 1);
  EXPECT_GT(gather.time_s, 0.0);
  EXPECT_NEAR(reduce.time_s + gather.time_s, sharded.breakdown.dp_comm_exposed_s, 1e-9 * sharded.step_s);
  s.plan.zero = 0;  // an all-reduce moves twice a reduce-scatter's bytes, and nothing is gathered
  const TrainingPrediction plain = predict_training(s);
  EXPECT_GT(dp_op(plain, "dp.grad_reduce").time_s, 1.5 * reduce.time_s);
  EXPECT_EQ(dp_op(plain, "dp.param_gather").count, 0);
  // ZeRO-2 keeps only its shard of the grads, so each of the 2 micro-batches reduces
  s.plan.zero = 2;
  const TrainingPrediction zero2 = predict_training(s);
  const OpPrediction reduce2 = dp_op(zero2, "dp.grad_reduce"), gather2 = dp_op(zero2, "dp.param_gather");
  EXPECT_EQ(reduce2.count, 2);
  EXPECT_EQ(gather2.count, 1);
  // straggler 0: the collective alone
  EXPECT_NEAR(reduce2.time_s,
              sharded_stage_comm(s.cluster, s.plan, s.stack, s.training->precision, stage_params(s.model, s.plan, 0), {}).reduce_s,
              1e-12);
  EXPECT_NEAR(2 * reduce2.time_s + gather2.time_s, zero2.breakdown.dp_comm_exposed_s, 1e-9 * zero2.step_s);
}

// A straggler fraction s makes every blocking collective wait s x the compute since the
// group last synchronised: a TP plan (a blocking all-reduce after every layer's ops) gets
// longer by close to s x its compute; one GPU alone waits for nobody.
TEST(TrainingStep, StragglerWaitsAtEveryBlockingCollective) {
  Scenario tp = test::device_alone(R"(
model: gpt2-large
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 8, micro_batch: 1}
plan: {tp: 2, pp: 1, dp: 1}
)");
  Scenario single = tp;
  single.plan.tp = 1;
  const TrainingPrediction tp0 = predict_training(tp), single0 = predict_training(single);
  tp.cluster.straggler = single.cluster.straggler = 0.1;
  const TrainingPrediction tp1 = predict_training(tp), single1 = predict_training(single);
  EXPECT_DOUBLE_EQ(single1.step_s, single0.step_s);
  const double compute = tp0.breakdown.compute_s;
  // every layer's compute precedes a TP all-reduce; only the head's last ops do not
  EXPECT_GT(tp1.step_s - tp0.step_s, 0.09 * compute);
  EXPECT_LE(tp1.step_s - tp0.step_s, 0.1 * compute * (1 + 1e-9));
  EXPECT_NEAR(tp1.breakdown.compute_s, compute, 1e-12 * compute);  // the wait is communication
  // the op table gives each collective its share of the wait (a measured collective
  // includes it), and nothing else changes: the shares add up to the step's wait
  ASSERT_EQ(tp1.ops.size(), tp0.ops.size());
  double added = 0;
  for (std::size_t i = 0; i < tp0.ops.size(); ++i) {
    const OpPrediction &before = tp0.ops[i], &after = tp1.ops[i];
    const double delta = (after.time_s - before.time_s) * after.count;
    const bool collective = after.name.find("tp_") != std::string::npos || after.name.find("reduce") != std::string::npos ||
                            after.name.find("enter") != std::string::npos;
    if (!collective) {
      EXPECT_EQ(delta, 0.0) << after.name;
    } else if (before.time_s > 0) {
      EXPECT_GT(delta, 0.0) << after.name;
    }
    added += delta;
  }
  EXPECT_NEAR(added, tp1.step_s - tp0.step_s, 0.005 * (tp1.step_s - tp0.step_s));
}

// Mixed precision: the optimizer updates the fp32 masters, then copies them into the
// model's 16-bit weights in a pass of its own (Megatron _copy_main_params_to_model_params),
// which optimizer.step includes; fp32 training has no copy.
TEST(TrainingStep, MixedPrecisionStepCopiesTheMastersIntoTheModel) {
  Scenario s = test::device_alone(R"(
model: gpt2-small
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 2, zero: 1}
)");
  const double shard = static_cast<double>(stage_params_per_gpu(s, 0) / 2);
  const std::vector<ComputeOp> mixed = optimizer_shard_ops(s.stack, s.plan, *s.training, shard);
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[0].kernel, "adamw");
  EXPECT_DOUBLE_EQ(mixed[0].bytes, 26 * shard);  // masters and moments 24, the bf16 grad 2
  EXPECT_EQ(mixed[1].kernel, "cast");
  EXPECT_DOUBLE_EQ(mixed[1].bytes, 6 * shard);  // fp32 read, bf16 written
  const double step_s = optimizer_step_s(s, 0);
  EXPECT_NEAR(step_s, op_time_s(s.cluster.gpu, mixed[0]) + op_time_s(s.cluster.gpu, mixed[1]), 1e-15);
  const TrainingPrediction p = predict_training(s);
  const auto in_table = std::find_if(p.ops.begin(), p.ops.end(), [](const OpPrediction& op) { return op.name == "optimizer.step"; });
  ASSERT_NE(in_table, p.ops.end());
  EXPECT_DOUBLE_EQ(in_table->time_s, step_s);
  s.training->precision = Dtype::fp32;
  const std::vector<ComputeOp> plain = optimizer_shard_ops(s.stack, s.plan, *s.training, shard);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_DOUBLE_EQ(plain[0].bytes, 28 * shard);
  EXPECT_LT(optimizer_step_s(s, 0), step_s);
}

// ZeRO-Offload: Adam's 12 bytes per parameter (fp32 weights and two moments) leave the GPU
// for CPU memory; the step's time becomes the host's update, bound by its DRAM, and the
// 16-bit weights' copy back over PCIe (the gradients' copy overlaps the backward pass).
TEST(TrainingStep, OffloadedOptimizerMovesItsStatesToTheHost) {
  const char* text = R"(
model: gpt2-small
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 2, zero: 1}
)";
  const Scenario gpu = test::device_alone(text);
  const Scenario host = test::device_alone(text, {"plan.offload_optimizer=true"});
  const double shard = static_cast<double>(stage_params_per_gpu(gpu, 0) / 2);
  const MemoryReport on_gpu = predict_memory(gpu), offloaded = predict_memory(host);
  EXPECT_EQ(offloaded.breakdown.optimizer, 0);
  EXPECT_EQ(offloaded.host_bytes, on_gpu.breakdown.optimizer);
  EXPECT_EQ(offloaded.host_bytes, static_cast<std::int64_t>(12 * shard));
  EXPECT_EQ(offloaded.peak_bytes, on_gpu.peak_bytes - on_gpu.breakdown.optimizer);
  // DGX H100 host (hardware/catalog/nodes/dgx-h100.yaml): CPU Adam moves 24 + 2 + 2 bytes
  // per parameter at the node's 614.4 GB/s DDR5 shared by the 2 GPUs the plan uses (the
  // other 6 update nothing); 2 bytes back at 51 GB/s H2D
  const double expected = 28 * shard / (614.4e9 / 2) + 2 * shard / 51e9;
  EXPECT_NEAR(optimizer_step_s(host, 0), expected, 1e-12);
  EXPECT_GT(optimizer_step_s(host, 0), optimizer_step_s(gpu, 0));  // HBM is 40x the host's share of DRAM
  EXPECT_GT(predict_training(host).step_s, predict_training(gpu).step_s);
  // no host described: refused, naming the key
  EXPECT_THROW(test::device_alone(text, {"plan.offload_optimizer=true", "cluster=dgx-h800"}), ScenarioError);
}

// ZeRO-Infinity's parameter offload on the same model, ZeRO-3 over two GPUs with the
// optimizer offloaded: the 16-bit parameter shard (2 bytes a value) leaves the GPU for CPU
// memory; every per-layer gather first copies the GPU's shard of the layer over PCIe (51
// GB/s H2D on the DGX H100), and the optimizer no longer copies the weights back.
TEST(TrainingStep, OffloadedParametersCrossPcieBeforeEachGather) {
  const char* text = R"(
model: gpt2-small
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 2, zero: 3, offload_optimizer: true}
)";
  const Scenario gpu = test::device_alone(text);
  const Scenario host = test::device_alone(text, {"plan.offload_params=true"});
  const std::int64_t stage = stage_params_per_gpu(gpu, 0);
  const MemoryReport on_gpu = predict_memory(gpu), offloaded = predict_memory(host);
  EXPECT_EQ(offloaded.breakdown.params, 0);
  EXPECT_EQ(offloaded.host_bytes - on_gpu.host_bytes, on_gpu.breakdown.params);
  EXPECT_EQ(on_gpu.breakdown.params, (stage + 1) / 2 * 2);  // the ZeRO-3 shard, bf16
  EXPECT_EQ(offloaded.peak_bytes, on_gpu.peak_bytes - on_gpu.breakdown.params);
  const StageParams layer = layer_params_on_gpu(gpu.model, gpu.plan, false);
  for (bool backward : {false, true})
    EXPECT_NEAR(zero3_layer_gather_s(host.cluster, host.plan, host.stack, layer, Dtype::bf16, backward) -
                    zero3_layer_gather_s(gpu.cluster, gpu.plan, gpu.stack, layer, Dtype::bf16, backward),
                static_cast<double>(layer.total()) / 2 * 2 / 51e9, 1e-15);
  const double shard = static_cast<double>(stage / 2);
  EXPECT_NEAR(optimizer_step_s(gpu, 0) - optimizer_step_s(host, 0), 2 * shard / 51e9, 1e-12);
  // refused where it cannot apply, naming the key
  for (const char* bad : {"plan.zero=2", "plan.offload_optimizer=false", "plan.overlap_grad_reduce=false",
                          "plan.zero_hpz_partition_size=2"})
    try {
      test::device_alone(text, {"plan.offload_params=true", bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("plan.offload_params"), std::string::npos) << bad << ": " << e.what();
    }
  EXPECT_THROW(test::device_alone(text, {"plan.offload_params=true", "plan.dp=1", "training.global_batch=4"}),
               ScenarioError);
}

// Context-parallel ranks compute gradients of the same parameters on other parts of the
// sequence, so Megatron-core reduces gradients, and shards ZeRO, over dp x cp ranks (its
// data-parallel group with context parallelism). Llama 3 8B, TP4 CP2 on one DGX H100: the
// group is the 2 CP ranks, 4 apart on the node; without overlap the whole stage's bf16
// gradients all-reduce over them after the backward (before, a plan with dp = 1 reduced
// nothing); with ZeRO-1 the optimizer steps half the stage, the shard the memory model holds.
TEST(TrainingStep, ContextParallelRanksReduceTheirGradientsTogether) {
  const char* text = R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 8192, global_batch: 4, micro_batch: 1, precision: bf16}
plan: {tp: 4, pp: 1, dp: 1, cp: 2, zero: 0, overlap_grad_reduce: false}
)";
  const Scenario s = test::device_alone(text);
  const GroupLayout dp = group_layout(s.cluster, s.plan, ParallelGroup::dp);
  EXPECT_EQ(dp.ranks, 2);
  EXPECT_EQ(dp.ranks_per_node, 2);
  const std::int64_t stage = stage_params_per_gpu(s, 0);
  const double reduce = collective_time_s(s.cluster, CollectiveOp::all_reduce, dp, static_cast<double>(stage) * 2);
  EXPECT_GT(reduce, 0.001);
  EXPECT_NEAR(predict_training(s).breakdown.dp_comm_exposed_s, reduce, 0.02 * reduce);
  const Scenario zero1 = test::device_alone(text, {"plan.zero=1"});
  EXPECT_DOUBLE_EQ(optimizer_step_s(zero1, 0),
                   optimizer_shard_s(zero1.cluster, zero1.stack, zero1.plan, *zero1.training, static_cast<double>(stage / 2)));
  EXPECT_EQ(predict_memory(zero1).breakdown.optimizer, (stage + 1) / 2 * 12);
  // TP2 CP2 DP2: four ranks two apart, all on the node
  const Scenario wide = test::device_alone(text, {"plan.tp=2", "plan.dp=2", "training.global_batch=8"});
  EXPECT_EQ(group_layout(wide.cluster, wide.plan, ParallelGroup::dp).ranks, 4);
  EXPECT_EQ(group_layout(wide.cluster, wide.plan, ParallelGroup::dp).ranks_per_node, 4);
}

// Routed experts live in buffers of their own, reduced over the ranks that hold the same
// experts (Megatron-core's expert-data-parallel group, dp x cp / ep). Mixtral 8x7B, TP2 EP8
// DP32 ZeRO-1 on 64 H100s without overlap: the dense gradients reduce-scatter over the 32
// data-parallel ranks, the experts' over 4 ranks 16 apart (one per node); the optimizer steps
// the dense share over 32 and the experts' over 4, as the memory model shards them; with
// EP = DP the experts have no data-parallel peer and reduce nothing. ZeRO-3's per-layer
// gathers (and reduce-scatters) split the same way.
TEST(TrainingStep, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
  const char* text = R"(
model: mixtral-8x7b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 256, micro_batch: 1, precision: bf16}
plan: {tp: 2, pp: 1, dp: 32, ep: 8, zero: 1, recompute: selective, sequence_parallel: true,
       overlap_grad_reduce: false, overlap_param_gather: false}
)";
  const Scenario s = test::device_alone(text);
  const GroupLayout dp = group_layout(s.cluster, s.plan, ParallelGroup::dp);
  const GroupLayout edp = group_layout(s.cluster, s.plan, ParallelGroup::expert_dp);
  EXPECT_EQ(dp.ranks, 32);
  EXPECT_EQ(edp.ranks, 4);
  EXPECT_EQ(edp.ranks_per_node, 1);
  const StageParams p = stage_params(s.model, s.plan, 0);
  ASSERT_GT(p.expert, p.dense);  // most of Mixtral is its experts
  EXPECT_DOUBLE_EQ(optimizer_step_s(s, 0),
                   optimizer_shard_s(s.cluster, s.stack, s.plan, *s.training,
                                     static_cast<double>(p.dense / 32 + p.expert / 4)));
  // one bucket (no overlap): the reduce-scatter and the gather back, each in two calls
  const double dense = static_cast<double>(p.dense), expert = static_cast<double>(p.expert);
  const double reduce = collective_time_s(s.cluster, CollectiveOp::reduce_scatter, dp, dense * 2) +
                        collective_time_s(s.cluster, CollectiveOp::reduce_scatter, edp, expert * 2);
  const double gather = collective_time_s(s.cluster, CollectiveOp::all_gather, dp, dense * 2) +
                        collective_time_s(s.cluster, CollectiveOp::all_gather, edp, expert * 2);
  EXPECT_NEAR(predict_training(s).breakdown.dp_comm_exposed_s, reduce + gather, 0.03 * (reduce + gather));
  // not cheaper than the whole buffer over the 32 ranks: the experts' group has one rank per
  // node, so all their bytes cross the network through one NIC per GPU
  EXPECT_GT(reduce, collective_time_s(s.cluster, CollectiveOp::reduce_scatter, dp, (dense + expert) * 2));
  // ZeRO-3's per-layer gathers split the same way: an MoE layer's dense parameters over the
  // 32 ranks, its experts over their 4
  const Scenario zero3 = test::device_alone(text, {"plan.zero=3", "plan.overlap_grad_reduce=true"});
  const StageParams moe = layer_params_on_gpu(zero3.model, zero3.plan, true);
  EXPECT_DOUBLE_EQ(zero3_layer_gather_s(zero3.cluster, zero3.plan, zero3.stack, moe, Dtype::bf16),
                   zero3_layer_gather_s(zero3.cluster, zero3.plan, zero3.stack, static_cast<double>(moe.dense),
                                        Dtype::bf16, dp) +
                       zero3_layer_gather_s(zero3.cluster, zero3.plan, zero3.stack, static_cast<double>(moe.expert),
                                            Dtype::bf16, edp));
  // ... and ZeRO-2's whole-stage reduce-scatter without overlap
  const Scenario zero2 = test::device_alone(text, {"plan.zero=2"});
  EXPECT_NEAR(sharded_stage_comm(zero2.cluster, zero2.plan, zero2.stack, Dtype::bf16, p, {}).reduce_s, reduce, 1e-12);
  // EP over the whole data-parallel group: no expert peer, only the dense gradients travel
  const Scenario alone = test::device_alone(text, {"plan.ep=8", "plan.dp=8", "plan.tp=8", "training.global_batch=64"});
  EXPECT_EQ(group_layout(alone.cluster, alone.plan, ParallelGroup::expert_dp).ranks, 1);
}

TEST(TrainingStep, TensorParallelCommunicationOverlapShortensStep) {
  const Scenario s = test::device_alone(R"(
model: llama2-13b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 32, micro_batch: 1}
plan: {tp: 8, pp: 1, dp: 1, sequence_parallel: true}
)");
  Scenario overlap = s;
  overlap.plan.tp_comm_overlap = true;
  const TrainingPrediction a = predict_training(s), b = predict_training(overlap);
  EXPECT_GT(a.breakdown.tp_comm_s, 0.0);
  EXPECT_LT(b.step_s, a.step_s);
  EXPECT_LT(b.breakdown.tp_comm_s, a.breakdown.tp_comm_s);
}

TEST(TrainingStep, DeterministicReports) {
  const Scenario s = test::device_alone(default_scenario_text());
  const TrainingPrediction a = predict_training(s), b = predict_training(s);
  EXPECT_EQ(a.step_s, b.step_s);
  EXPECT_EQ(to_json(a.breakdown).dump(), to_json(b.breakdown).dump());
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// Full mode simulates every GPU and the NICs; where no link is shared beyond what the
// collective model already assumes, it must agree with fast mode.
TEST(TrainingStep, FullModeAgreesWithFastMode) {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"plan.tp=8", "plan.dp=4", "plan.pp=1"},
           {"plan.tp=2", "plan.pp=2", "plan.dp=2", "plan.zero=1"},
           {"plan.tp=4", "plan.pp=2", "plan.dp=1", "plan.sequence_parallel=true", "plan.recompute=full"},
           {"plan.tp=1", "plan.pp=4", "plan.dp=2", "plan.schedule=interleaved", "plan.virtual_stages=2"}}) {
    const Scenario s = test::device_alone(R"(
model: gpt2-medium
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 32, micro_batch: 1}
plan: {}
)",
                                          sets);
    const TrainingPrediction fast = predict_training(s, "", Fidelity::fast);
    const TrainingPrediction full = predict_training(s, "", Fidelity::full_per_rank);
    EXPECT_NEAR(full.step_s, fast.step_s, 1e-9 * fast.step_s) << sets.front();
    EXPECT_GT(full.tasks, fast.tasks);
    EXPECT_EQ(predict_training(s, "", Fidelity::full).step_s, full.step_s) << sets.front();
  }
}

// Pipeline sends that cross nodes share the NIC with data-parallel traffic: full mode
// sees the contention that fast mode cannot, so it is never faster.
TEST(TrainingStep, BothModesSeeSharedNics) {
  const Scenario s = test::device_alone(R"(
model: gpt2-medium
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 32, micro_batch: 1}
plan: {tp: 4, pp: 2, dp: 4, sequence_parallel: true}
)");
  const double full = predict_training(s, "", Fidelity::full).step_s;
  const double fast = predict_training(s, "", Fidelity::fast).step_s;
  // fast mode shares each stage's one NIC between its DP collectives and its pipeline
  // transfers as full mode shares every GPU's: here the two agree
  EXPECT_NEAR(fast, full, 0.01 * full);
  // the sharing itself: in fast mode a stage's NIC carries both kinds of traffic
  const StepGraph g = build_step_graph(s, price_step(s), Fidelity::fast);
  std::set<std::string> on_nic;
  for (engine::ResourceId r = 0; r < g.graph.num_resources(); ++r)
    if (g.graph.resource(r).name == "stage0.nic")
      for (engine::TaskId t : g.graph.tasks_on(r)) on_nic.insert(g.graph.category_name(g.graph.category_of(t)));
  EXPECT_TRUE(on_nic.contains("pp_comm"));
  EXPECT_TRUE(on_nic.contains("dp_comm"));
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// The trace names ops as the op graph does, and a layer's ops fill exactly its task.
TEST(TrainingStep, TraceShowsOpsOfEachLayer) {
  const Scenario s = test::device_alone(R"(
model: gpt2-small
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 8, micro_batch: 1}
plan: {tp: 2, pp: 2, dp: 2, recompute: full}
)");
  const std::string path = ::testing::TempDir() + "/twinsim_trace.json";
  const TrainingPrediction p = predict_training(s, path);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::string> names;
  double last_end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    names.insert(e["name"].get<std::string>());
    last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
  }
  for (const char* op : {"layer0.attn.qkv.fwd", "layer0.mlp.fc2.bwd_dgrad", "layer0.mlp.fc2.bwd_wgrad",
                         "layer0.attn.core.recompute", "layer6.attn.proj.fwd", "optimizer.step", "pp.send.fwd"})
    EXPECT_TRUE(names.count(op)) << op;
  EXPECT_NEAR(last_end_us * 1e-6, p.step_s, 1e-9);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

TEST(TrainingStep, UtilizationIsAFractionOfTheStep) {
  const TrainingPrediction alone = predict_training(gpt({}));
  EXPECT_NEAR(alone.utilization.compute, 1.0, 1e-9);  // one GPU, no communication: always busy
  const TrainingPrediction piped = predict_training(gpt({"plan.pp=4", "model.vocab=64"}));
  // the compute stream idles exactly for the bubble (and nothing else in this scenario)
  EXPECT_NEAR(piped.utilization.compute, 1.0 - piped.breakdown.pp_bubble_s / piped.step_s, 1e-6);
  for (const TrainingPrediction* p : {&alone, &piped}) {
    EXPECT_GT(p->utilization.hbm_bandwidth, 0.0);
    EXPECT_LT(p->utilization.hbm_bandwidth, 1.0);
  }
  EXPECT_GT(piped.utilization.pp_link, 0.0);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// Gradient clipping adds a read of the grad shard for its norm, a scaling pass (read and
// write), and a 4-byte all-reduce of the norm per parallel group: 3 x 2 bytes per
// parameter of the shard at no more than the HBM's peak, plus a few microseconds.
TEST(TrainingStep, GradientClippingAddsTwoPassesAndTheNormsAllReduce) {
  const char* text = R"(
model: gpt2-small
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 2, pp: 1, dp: 2, zero: 1}
)";
  const Scenario plain = test::device_alone(text);
  const Scenario clipped = test::device_alone(text, {"training.optimizer={name: adamw, grad_clip: 1.0}"});
  EXPECT_DOUBLE_EQ(clipped.training->optim.grad_clip, 1.0);
  const double shard = static_cast<double>(stage_params_per_gpu(plain, 0) / 2);
  const double added = optimizer_step_s(clipped, 0) - optimizer_step_s(plain, 0);
  const double passes_at_peak = 3 * 2 * shard / plain.cluster.gpu.hbm_bandwidth_Bps;
  EXPECT_GT(added, passes_at_peak);
  EXPECT_LT(added, passes_at_peak * 2 + 200e-6);  // the memory efficiency, and two all-reduces' latency
  EXPECT_GT(predict_training(clipped).step_s, predict_training(plain).step_s);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// With sequence parallelism each TP rank computes only its tokens' share of the grads of the
// parameters it holds whole; the step ends with their TP all-reduce, after the backward and
// before the optimizer (Megatron-core finalize_model_grads, _allreduce_layernorm_grads).
TEST(TrainingStep, SequenceParallelSumsReplicatedGradsOverTpBeforeTheOptimizer) {
  const char* yaml = R"(
model: gpt2-medium
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 8, micro_batch: 1}
plan: {tp: 4, pp: 2, dp: 1, sequence_parallel: %s}
)";
  char text[256];
  std::snprintf(text, sizeof text, yaml, "true");
  const Scenario s = test::device_alone(text);
  // by hand, gpt2-medium (hidden 1024, 24 layers, LayerNorms with biases, 1024 learned
  // positions): a layer's two LayerNorms 2 x 2048, attention and fc2 biases 2 x 1024; 12 a stage.
  // The first stage adds the positions 1024 x 1024, the last the final LayerNorm 2048.
  const std::int64_t layers = 12 * (2 * 2048 + 2 * 1024);
  const std::int64_t counts[] = {layers + 1024 * 1024, layers + 2048};
  const int bytes = grad_element_bytes(dp_gradient_dtype(s.stack, s.training->precision));
  const GroupLayout tp = group_layout(s.cluster, s.plan, ParallelGroup::tp);
  const StepGraph g = build_step_graph(s, price_step(s), Fidelity::fast);
  bool seen[2] = {false, false};  // each stage's sum (each stage's TP group), by its bytes
  for (engine::TaskId t = 0; t < g.graph.num_tasks(); ++t) {
    if (g.graph.name(t) != "dp.grad_reduce.tp") continue;
    bool priced = false;
    for (int stage : {0, 1}) {
      const double want = collective_time_s(s.cluster, CollectiveOp::all_reduce, tp, counts[stage] * bytes);
      if (std::abs(g.graph.duration(t) - want) <= 1e-9 * want) priced = seen[stage] = true;
    }
    EXPECT_TRUE(priced) << g.graph.duration(t);
    bool before_optimizer = false;
    for (const auto& [before, after] : g.graph.dependencies())
      before_optimizer |= before == t && g.graph.name(after) == op_names::kOptimizerStep;
    EXPECT_TRUE(before_optimizer);
  }
  EXPECT_TRUE(seen[0] && seen[1]);
  std::snprintf(text, sizeof text, yaml, "false");
  const StepGraph without = build_step_graph(test::device_alone(text), price_step(test::device_alone(text)));
  for (engine::TaskId t = 0; t < without.graph.num_tasks(); ++t) EXPECT_NE(without.graph.name(t), "dp.grad_reduce.tp");
}

// Under ZeRO-2 every micro-batch's reduce-scatter drops the grads, so the partial ones are
// summed before each (exec/train/zero.cpp): micro-batches times ZeRO-1's once a step.
TEST(TrainingStep, ShardedGradsSumTheSequenceParallelGradsEachMicroBatch) {
  const char* yaml = R"(
model: gpt2-medium
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 16, micro_batch: 1}
plan: {tp: 4, pp: 1, dp: 2, zero: %d, sequence_parallel: true}
)";
  char text[256];
  double once[2];
  for (int zero : {1, 2}) {
    std::snprintf(text, sizeof text, yaml, zero);
    const Scenario s = test::device_alone(text);
    once[zero - 1] = tp_grad_sum_s(s.cluster, s.model, s.plan, s.stack, *s.training, 0);
  }
  EXPECT_GT(once[0], 0);
  EXPECT_DOUBLE_EQ(once[1], 8 * once[0]);  // 16 sequences over dp 2, one a micro-batch: 8
}

}  // namespace
}  // namespace twinsim
