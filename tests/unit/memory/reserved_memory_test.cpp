// Memory as the caching allocator reserves it (sim/memory/reserved_memory): the replay of an
// allocation sequence, the step's sequence, and `fits` judged on the reserve plus what lives
// outside the allocator under stack.fits_on_reserved.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/reserved_memory.hpp"

namespace twinsim {
namespace {

constexpr std::int64_t MiB = 1 << 20;
const std::string kRun = std::string(TWINSIM_SOURCE_DIR) +
                         "/scenarios/validation/training/torchtitan-llama31-8b-8gpu-fsdp-compile.yaml";

// Three 100 MiB tensors, the outer two freed, then 200 MiB: by hand, 300 MiB allocated at the
// peak and 500 reserved in separate segments, 400 in one expandable segment.
TEST(ReservedMemory, ReplayReservesWhatTheAllocatorWould) {
  const std::vector<AllocationEvent> events = {{true, 0, 100 * MiB}, {true, 1, 100 * MiB}, {true, 2, 100 * MiB},
                                               {false, 0, 0},        {false, 2, 0},        {true, 3, 200 * MiB}};
  const AllocatorReplay plain = replay_allocations(events, {false, 0});
  EXPECT_EQ(plain.peak_allocated, 300 * MiB);
  EXPECT_EQ(plain.peak_reserved, 500 * MiB);
  EXPECT_EQ(replay_allocations(events, {true, 0}).peak_reserved, 400 * MiB);
}

// A block freed on one stream is never handed to another: 100 MiB made and freed on the
// compute stream, then 100 MiB on the all-gather stream. One pool reuses the block (100 MiB
// reserved); a pool per stream reserves a second segment (200), with 100 allocated at most.
TEST(ReservedMemory, EachStreamReservesInItsOwnPool) {
  std::vector<AllocationEvent> events = {{true, 0, 100 * MiB}, {false, 0, 0}, {true, 1, 100 * MiB}};
  EXPECT_EQ(replay_allocations(events, {false, 0}).peak_reserved, 100 * MiB);
  events[2].stream = AllocStream::all_gather;
  const AllocatorReplay pools = replay_allocations(events, {false, 0});
  EXPECT_EQ(pools.peak_allocated, 100 * MiB);
  EXPECT_EQ(pools.peak_reserved, 200 * MiB);
}

// FSDP2's buffers in a torchtitan step (stack.fsdp_stream_pools): at most two all-gather
// outputs live at once (the forward defers each free to the next gather), each one layer's
// bf16 parameters: Llama 3.1 8B's layer by hand, q/k/v/o 4096 x (4096 + 1024 + 1024 + 4096),
// the SwiGLU's 3 x 4096 x 14336 and two 4096-wide norms = 218,112,000 parameters, 2 bytes each;
// the fp32 reduce-scatter inputs (4 bytes a parameter) on the reduce-scatter stream.
TEST(ReservedMemory, FsdpBuffersLiveOnTheirStreams) {
  const Scenario s = load_scenario_file(kRun);
  ASSERT_TRUE(s.stack.fsdp_stream_pools);
  const MemoryReport m = predict_memory(s);
  constexpr std::int64_t layer_params = 218'112'000;
  std::map<int, std::int64_t> all_gather;
  std::size_t most_gathers = 0;
  std::int64_t largest_reduce = 0;
  for (const AllocationEvent& e : training_step_allocations(s, 0, m.stages.front())) {
    if (!e.allocate) {
      all_gather.erase(e.tensor);
      continue;
    }
    if (e.stream == AllocStream::all_gather) {
      EXPECT_EQ(e.bytes, 2 * layer_params);
      all_gather[e.tensor] = e.bytes;
      most_gathers = std::max(most_gathers, all_gather.size());
    }
    if (e.stream == AllocStream::reduce_scatter) largest_reduce = std::max(largest_reduce, e.bytes);
  }
  EXPECT_EQ(most_gathers, 2u);
  EXPECT_EQ(largest_reduce, 4 * layer_params);
  // without the pools the same step reserves less: nothing is kept apart from the compute stream's
  Scenario one_pool = s;
  one_pool.stack.fsdp_stream_pools = false;
  EXPECT_LT(predict_memory(one_pool).reserved_peak_bytes, m.reserved_peak_bytes);
}

// TP's loss_parallel backward, (grad_input + exp(x)) * grad_output, holds four fp32 logit-sized
// tensors at once: the kept log-softmax x, grad_input, exp(x) and their sum (its forward three:
// the fp32 copy, shifted and exp(shifted)). Llama 3.1 70B at TP 8, local batch 16 of 8192
// tokens: 16 x 8192 tokens x 128256 / 8 = 16032 logits each, 4 bytes a logit.
TEST(ReservedMemory, LossParallelBackwardHoldsFourFp32Logits) {
  const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                        "/scenarios/validation/training/torchtitan-llama31-70b-256gpu-tp8.yaml");
  ASSERT_TRUE(s.stack.eager_fp32_loss());
  const MemoryReport m = predict_memory(s);
  constexpr std::int64_t fp32_logits = std::int64_t{4} * 16 * 8192 * 16032;
  std::map<int, std::int64_t> live;
  std::size_t most = 0;
  for (const AllocationEvent& e : training_step_allocations(s, 0, m.stages.front())) {
    if (e.allocate && e.bytes == fp32_logits) live[e.tensor] = e.bytes;
    if (!e.allocate) live.erase(e.tensor);
    most = std::max(most, live.size());
  }
  EXPECT_EQ(most, 4u);
}

// Every tensor a step makes is freed but the model's shard and the optimizer's states, one of
// each a layer: what outlives the two steps is the stage's params + optimizer bytes.
TEST(ReservedMemory, TheStepFreesWhatItMakes) {
  const Scenario s = load_scenario_file(kRun);
  const MemoryReport m = predict_memory(s);
  const StageMemory& stage = m.stages.front();
  std::map<int, std::int64_t> live;
  for (const AllocationEvent& e : training_step_allocations(s, 0, stage)) {
    if (e.allocate) live[e.tensor] = e.bytes;
    else live.erase(e.tensor);
  }
  std::int64_t left = 0;
  for (const auto& [tensor, bytes] : live) left += bytes;
  const std::int64_t layers = s.model.layers;
  EXPECT_EQ(static_cast<std::int64_t>(live.size()), 2 * layers);
  EXPECT_EQ(left, layers * (stage.breakdown.params / layers + stage.breakdown.optimizer / layers));
}

// The reserve is never below the allocated peak inside the allocator (the peak less NCCL's
// buffers), and the memory outside it is the CUDA context plus NCCL's buffers.
TEST(ReservedMemory, ReserveAndOutsideOfATorchtitanRun) {
  const MemoryReport m = predict_memory(load_scenario_file(kRun));
  const std::int64_t nccl = 64 * MiB;  // one communicator (FSDP's 8 ranks)
  EXPECT_EQ(m.outside_allocator_bytes, kCudaContextBytes + nccl);
  EXPECT_GE(m.reserved_peak_bytes, m.peak_bytes - nccl);
}

// A device that holds the allocated peak but not the reserve and the context: the stack that
// judges on the reserve (torchtitan's) refuses it, the allocated peak alone would not.
TEST(ReservedMemory, FitsJudgesTheReserveUnderFitsOnReserved) {
  Scenario s = load_scenario_file(kRun);
  const MemoryReport before = predict_memory(s);
  ASSERT_GT(before.reserved_peak_bytes + before.outside_allocator_bytes, before.peak_bytes + 512 * MiB);
  s.cluster.gpu.memory_bytes = before.peak_bytes + 256 * MiB;
  EXPECT_FALSE(predict_memory(s).fits);
  s.stack.fits_on_reserved = false;
  EXPECT_TRUE(predict_memory(s).fits);
}

}  // namespace
}  // namespace twinsim
