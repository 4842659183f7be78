// Memory as the caching allocator reserves it (sim/memory/reserved_memory): the replay of an
// allocation sequence, the step's sequence, and `fits` judged on the reserve plus what lives
// outside the allocator under stack.fits_on_reserved.
#include <gtest/gtest.h>

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
