// Interference (TaskGraph::add_interference): a compute task runs `slowdown` times slower
// while a communication stream of its GPU is busy. Timelines derived by hand.
#include <gtest/gtest.h>

#include <vector>

#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

struct Gpu {
  TaskGraph g;
  CategoryId cat = g.category("work");
  ResourceId compute = g.add_stream(0, "compute");
  ResourceId comm = g.add_stream(0, "dp_comm");
  ResourceId other = g.add_stream(1, "compute");  // another GPU: no interference
  explicit Gpu(double slowdown) {
    const std::vector<ResourceId> interferers{comm};
    g.add_interference(compute, interferers, slowdown);
  }
};

TEST(Interference, ComputeSlowsWhileTheCommRuns) {
  Gpu gpu(1.5);
  const TaskId a = gpu.g.add_task("compute", 10.0, gpu.cat, {gpu.compute});
  const TaskId b = gpu.g.add_task("allgather", 4.0, gpu.cat, {gpu.comm});
  const Timeline tl = simulate(gpu.g);
  // 0..4 the comm runs: compute does 4 / 1.5 of its work; the other 10 - 8/3 at full speed
  EXPECT_DOUBLE_EQ(tl.end_s[b], 4.0);
  EXPECT_NEAR(tl.end_s[a], 4.0 + (10.0 - 4.0 / 1.5), 1e-12);  // = 10 + 4 (1 - 1/1.5)
  EXPECT_NEAR(tl.slowed_s[a], 4.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(tl.slowed_s[b], 0.0);  // the comm itself is not slowed
  EXPECT_EQ(tl.events, 2u);               // re-timed finish events are not counted
}

TEST(Interference, ComputeShorterThanTheCommRunsSlowedThroughout) {
  Gpu gpu(1.5);
  const TaskId a = gpu.g.add_task("compute", 2.0, gpu.cat, {gpu.compute});
  gpu.g.add_task("allgather", 10.0, gpu.cat, {gpu.comm});
  const Timeline tl = simulate(gpu.g);
  EXPECT_NEAR(tl.end_s[a], 3.0, 1e-12);  // 2 x 1.5
  EXPECT_NEAR(tl.makespan_s, 10.0, 1e-12);
}

TEST(Interference, ACommStartingMidwayReTimesTheComputeTask) {
  Gpu gpu(1.5);
  const TaskId a = gpu.g.add_task("compute", 10.0, gpu.cat, {gpu.compute});
  const TaskId x = gpu.g.add_task("elsewhere", 5.0, gpu.cat, {gpu.other});
  const TaskId b = gpu.g.add_task("allgather", 2.0, gpu.cat, {gpu.comm});
  gpu.g.add_dependency(x, b);
  const Timeline tl = simulate(gpu.g);
  // 0..5 full speed (5 done); 5..7 slowed (2 / 1.5 done); the rest, 10 - 5 - 4/3, at full
  EXPECT_DOUBLE_EQ(tl.start_s[b], 5.0);
  EXPECT_NEAR(tl.end_s[a], 7.0 + (10.0 - 5.0 - 2.0 / 1.5), 1e-12);
  // work on another GPU is not slowed by this GPU's comm
  EXPECT_DOUBLE_EQ(tl.end_s[x], 5.0);
}

TEST(Interference, ASecondCommBackToBackKeepsTheSlowdownOn) {
  Gpu gpu(2.0);
  const TaskId a = gpu.g.add_task("compute", 10.0, gpu.cat, {gpu.compute});
  const TaskId b1 = gpu.g.add_task("gather1", 2.0, gpu.cat, {gpu.comm});
  const TaskId b2 = gpu.g.add_task("gather2", 2.0, gpu.cat, {gpu.comm});
  gpu.g.add_dependency(b1, b2);
  const Timeline tl = simulate(gpu.g);
  // 0..4 slowed by 2 (2 done), then 8 at full speed
  EXPECT_DOUBLE_EQ(tl.end_s[b2], 4.0);
  EXPECT_NEAR(tl.end_s[a], 12.0, 1e-12);
}

TEST(Interference, RefusesBadArguments) {
  TaskGraph g;
  const ResourceId s = g.add_stream(0, "compute"), c = g.add_stream(0, "comm");
  const ResourceId link = g.add_link("nic");
  const std::vector<ResourceId> comm{c}, links{link};
  EXPECT_THROW(g.add_interference(s, comm, 0.5), std::invalid_argument);
  EXPECT_THROW(g.add_interference(s, links, 1.2), std::invalid_argument);
  g.add_interference(s, comm, 1.2);
  EXPECT_THROW(g.add_interference(s, comm, 1.2), std::invalid_argument);  // c already interferes
}
