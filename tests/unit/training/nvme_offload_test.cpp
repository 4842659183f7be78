// ZeRO-Infinity's NVMe tier (plan.offload_device: nvme) against hand-derived figures: where
// the bytes go (the drives, and DeepSpeed's default swap buffers in CPU memory) and what the
// swaps cost at the catalog's measured drive rates (azure-nd-h200-v5: 48 GB/s read, 26 GB/s
// write for the node's 8 GPUs, DeepSpeed's DeepNVMe blog of 03-2025).
#include <gtest/gtest.h>

#include <string>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"
#include "sim/training/zero_comm.hpp"
#include "tests/unit/scenario/device_alone.hpp"

namespace twinsim {
namespace {

constexpr double kReadPerGpu = 48e9 / 8, kWritePerGpu = 26e9 / 8;  // every GPU of the node swaps at once
constexpr double kH2d = 52e9;                                         // the DGX H200's nvbandwidth figure

const char* kSmall = R"(
model: gpt2-small
cluster: azure-nd-h200-v5
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, offload_optimizer: true}
)";

std::int64_t stage_params_total(const Scenario& s) { return stage_params(s.model, s.plan, 0).total(); }

void expect_refused(const char* text, const std::vector<std::string>& sets, const std::string& key) {
  try {
    test::device_alone(text, sets);
    ADD_FAILURE() << sets.back() << " accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

// The optimizer's states move from CPU memory to the drives: Adam's 12 bytes a value of the
// GPU's shard. CPU memory keeps 4 fp32 buffers of the largest sub-group, here the whole
// shard (under DeepSpeed's 1e9), 16 bytes a value: more than the 12 it held, a small model's
// price. The update first reads the states and the fp32 gradients (16 bytes a value) at the
// GPU's eighth of the drives' read rate, then writes the 12 back at its eighth of the write.
TEST(NvmeOffload, OptimizerStatesSwapThroughTheDrives) {
  const Scenario cpu = test::device_alone(kSmall);
  const Scenario nvme = test::device_alone(kSmall, {"plan.offload_device=nvme"});
  const std::int64_t shard = (stage_params_total(cpu) + 7) / 8;
  const MemoryReport on_cpu = predict_memory(cpu), on_nvme = predict_memory(nvme);
  EXPECT_EQ(on_cpu.host_breakdown.optimizer, shard * 12);
  EXPECT_EQ(on_cpu.nvme_bytes, 0);
  EXPECT_EQ(on_nvme.nvme_bytes, shard * 12);
  EXPECT_EQ(on_nvme.nvme_breakdown.optimizer, shard * 12);
  EXPECT_EQ(on_nvme.host_breakdown.optimizer, 4 * shard * 4);
  EXPECT_EQ(on_nvme.peak_bytes, on_cpu.peak_bytes);  // the GPU's side does not change
  const double values = static_cast<double>(stage_params_total(cpu) / 8);
  const double swap = 16 * values / kReadPerGpu + 12 * values / kWritePerGpu;
  EXPECT_NEAR(optimizer_step_s(nvme, 0) - optimizer_step_s(cpu, 0), swap, 1e-12);
  EXPECT_NEAR(predict_training(nvme).step_s - predict_training(cpu).step_s, swap, 1e-6 * swap);
  // the JSON report carries them; the CPU plan's has no nvme keys
  const MemorySection section = memory_section(on_nvme);
  ASSERT_TRUE(section.nvme_bytes.has_value());
  EXPECT_EQ(*section.nvme_bytes, shard * 12);
  EXPECT_FALSE(section.nvme_capacity_bytes.has_value());  // the catalog gives no capacity
  EXPECT_FALSE(memory_section(on_cpu).nvme_bytes.has_value());
}

// A stack's measured host time for the offloaded step (stack.offload_update_ns_per_param):
// GPT-2 small over 8 GPUs, a shard of about 15.5M parameters. The floor is the host's DRAM
// bandwidth (28 bytes a parameter: Adam's 24, the bf16 gradient and the bf16 copy, at the
// node's 614.4 GB/s / 8) plus the 16-bit weights back over PCIe (2 bytes at 52 GB/s): about
// 0.40 ns a parameter. 5 ns a parameter lies above it and sets the step; 0.1 ns lies below it
// and changes nothing.
TEST(CpuOffload, TheStacksHostTimePerParameterBoundsTheUpdate) {
  const Scenario floor = test::device_alone(kSmall);
  const Scenario slow = test::device_alone(kSmall, {"stack.offload_update_ns_per_param=5"});
  const Scenario fast = test::device_alone(kSmall, {"stack.offload_update_ns_per_param=0.1"});
  const double shard = static_cast<double>(stage_params_total(floor) / 8);
  const double bandwidth = 28 * shard / (614.4e9 / 8) + 2 * shard / kH2d;
  // (kSmall sets no grad_clip: the step is the update alone)
  EXPECT_NEAR(optimizer_step_s(floor, 0), bandwidth, 1e-3 * bandwidth);
  EXPECT_NEAR(optimizer_step_s(slow, 0), 5e-9 * shard, 1e-3 * 5e-9 * shard);
  EXPECT_DOUBLE_EQ(optimizer_step_s(fast, 0), optimizer_step_s(floor, 0));
  // the step graph and the search's estimate price it alike: the whole difference shows
  const double added = 5e-9 * shard - bandwidth;
  EXPECT_NEAR(predict_training(slow).step_s - predict_training(floor).step_s, added, 1e-6 * added);
}

// The host CPU's measured Adam rate (cluster.host.adam_ns_per_param, which `twinsim
// calibrate` writes): the update takes the slower of it and the DRAM floor, then the 16-bit
// weights go back over PCIe as before. At 5 ns a parameter the rate sets the update: 5 ns
// times the shard plus its 2 bytes a parameter at 52 GB/s; at 0.1 ns the floor stays.
TEST(CpuOffload, TheHostsMeasuredAdamRateBoundsTheUpdate) {
  const Scenario floor = test::device_alone(kSmall);
  const Scenario slow = test::device_alone(kSmall, {"cluster.host.adam_ns_per_param=5"});
  const Scenario fast = test::device_alone(kSmall, {"cluster.host.adam_ns_per_param=0.1"});
  const double shard = static_cast<double>(stage_params_total(floor) / 8);
  EXPECT_NEAR(slow.cluster.host.adam_s_per_param, 5e-9, 1e-15);
  const double update = 5e-9 * shard + 2 * shard / kH2d;
  EXPECT_NEAR(optimizer_step_s(slow, 0), update, 1e-9 * update);
  EXPECT_DOUBLE_EQ(optimizer_step_s(fast, 0), optimizer_step_s(floor, 0));
  EXPECT_NEAR(predict_training(slow).step_s - predict_training(floor).step_s, update - optimizer_step_s(floor, 0),
              1e-6 * update);
}

// The host's DRAM is shared by the ranks that update at once: a plan on 2 of the node's 8
// GPUs gives each half the node's 614.4 GB/s, not an eighth (as the drives' rate,
// nvme_read_share_Bps). fp32 here: Adam's 24 bytes and the fp32 gradient's 4 a parameter,
// the fp32 weights back at 4 bytes over 52 GB/s. With the gradients reduced after the
// backward (plan.overlap_grad_reduce: false, as the executor runs it) their copy to the
// host joins the step: 4 bytes a parameter at 52 GB/s (d2h).
TEST(CpuOffload, TwoRanksShareTheNodesDramAndCopyLateGradients) {
  const char* text = R"(
model: gpt2-small
cluster: azure-nd-h200-v5
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: fp32}
plan: {tp: 1, pp: 1, dp: 2, zero: 1, offload_optimizer: true}
)";
  const Scenario overlapped = test::device_alone(text);
  const Scenario late = test::device_alone(text, {"plan.overlap_grad_reduce=false"});
  const double shard = static_cast<double>(stage_params_total(overlapped) / 2);
  const double update = 28 * shard / (614.4e9 / 2) + 4 * shard / kH2d;
  EXPECT_NEAR(optimizer_step_s(overlapped, 0), update, 1e-3 * update);
  const double copied = update + 4 * shard / 52e9;
  EXPECT_NEAR(optimizer_step_s(late, 0), copied, 1e-3 * copied);
}

// A shard larger than DeepSpeed's sub-group (1e9 values): the CPU's optimizer buffers stay
// at 4 x 1e9 x 4 bytes = 16 GB however large the model. Llama-3-70B, ZeRO-3 over 8 GPUs:
// 8.8e9 values a GPU, 106 GB of states on the drives, 16 GB in CPU memory.
TEST(NvmeOffload, CpuBuffersHoldOneSubGroup) {
  const char* text = R"(
model: llama3-70b
cluster: azure-nd-h200-v5
training: {seq_len: 4096, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: full, offload_optimizer: true, offload_device: nvme}
)";
  const Scenario s = test::device_alone(text);
  const std::int64_t shard = (stage_params_total(s) + 7) / 8;
  ASSERT_GT(shard, kNvmeSubGroupParams);
  const MemoryReport m = predict_memory(s);
  EXPECT_EQ(m.host_breakdown.optimizer, 16'000'000'000);
  EXPECT_EQ(m.nvme_breakdown.optimizer, shard * 12);
  // a capacity, when given, is checked: 100 GiB of drives for the node hold 12.5 GiB a GPU
  const Scenario small_drives = test::device_alone(
      text, {"cluster=null", "cluster.gpu=h200-sxm", "cluster.intra_node.bandwidth_GBps=450",
             "cluster.inter_node.bandwidth_GBps=50",
             "cluster.host={h2d_GBps: 52, memory_bandwidth_GBps: 614.4, memory_GiB: 1723, nvme_read_GBps: 48, "
             "nvme_write_GBps: 26, nvme_GiB: 100}"});
  const MemoryReport tight = predict_memory(small_drives);
  EXPECT_EQ(tight.nvme_capacity_bytes, 100LL * 1073741824 / 8);
  EXPECT_FALSE(tight.fits);
}

// Parameters on the drives too: each ZeRO-3 gather first reads the GPU's 16-bit shard of the
// layer from the drives, then copies it over PCIe; the update writes the shard back to the
// drives (where the CPU tier wrote it in place). CPU memory keeps the parameter swapper's
// 5 x 1e8 16-bit buffers.
TEST(NvmeOffload, OffloadedParametersReadFromTheDrivesBeforeEachGather) {
  const Scenario cpu = test::device_alone(kSmall, {"plan.offload_params=true"});
  const Scenario nvme = test::device_alone(kSmall, {"plan.offload_params=true", "plan.offload_device=nvme"});
  const std::int64_t shard = (stage_params_total(cpu) + 7) / 8;
  const MemoryReport m = predict_memory(nvme);
  EXPECT_EQ(m.nvme_breakdown.params, shard * 2);
  EXPECT_EQ(m.host_breakdown.params, 5 * 100'000'000LL * 2);
  const StageParams layer = layer_params_on_gpu(cpu.model, cpu.plan, false);
  const double layer_shard_bytes = static_cast<double>(layer.total()) / 8 * 2;
  for (bool backward : {false, true}) {
    EXPECT_NEAR(zero3_layer_gather_s(nvme.cluster, nvme.plan, nvme.stack, layer, Dtype::bf16, backward) -
                    zero3_layer_gather_s(cpu.cluster, cpu.plan, cpu.stack, layer, Dtype::bf16, backward),
                layer_shard_bytes / kReadPerGpu, 1e-15);
    EXPECT_GT(zero3_layer_gather_s(cpu.cluster, cpu.plan, cpu.stack, layer, Dtype::bf16, backward),
              layer_shard_bytes / kH2d);
  }
  const double values = static_cast<double>(stage_params_total(cpu) / 8);
  EXPECT_NEAR(optimizer_step_s(nvme, 0) - optimizer_step_s(cpu, 0),
              16 * values / kReadPerGpu + (12 + 2) * values / kWritePerGpu, 1e-12);
}

// Refused where DeepSpeed cannot run it or twinsim cannot price it, naming the key.
TEST(NvmeOffload, RefusedOutsideItsScope) {
  for (const char* bad : {"plan.zero=2", "plan.offload_optimizer=false", "cluster=dgx-h200"})
    expect_refused(kSmall, {"plan.offload_device=nvme", bad}, "plan.offload_device");
  expect_refused(kSmall, {"plan.offload_device=ssd"}, "plan.offload_device");
  const char* serving = R"(
model: gpt2-small
cluster: azure-nd-h200-v5
inference: {batch: 1, prompt_len: 128, output_len: 16}
plan: {tp: 1, pp: 1, dp: 1}
)";
  expect_refused(serving, {"plan.offload_device=nvme"}, "plan.offload_device");
  // the drives' size without their read rate
  expect_refused(kSmall, {"cluster=dgx-h200", "cluster.host={h2d_GBps: 52, memory_bandwidth_GBps: 614.4, memory_GiB: 2048, nvme_GiB: 100}"},
                 "nvme_read_GBps");
}

}  // namespace
}  // namespace twinsim
