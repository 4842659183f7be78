// Schedules that can never finish must be reported with the ops involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/engine/deadlock.hpp"
#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

namespace {

bool mentions(const std::string& text, const std::string& op) {
  return text.find("'" + op + "'") != std::string::npos || text.find(op + " ") != std::string::npos;
}

// Rotates a reported cycle so it starts at `first`, for order-insensitive comparison.
std::vector<std::string> rotated(std::vector<std::string> ops, const std::string& first) {
  auto it = std::find(ops.begin(), ops.end(), first);
  std::rotate(ops.begin(), it, ops.end());
  return ops;
}

}  // namespace

TEST(Deadlock, DependencyCycleNamesTheOpsOnIt) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto s0 = g.add_stream(0, "compute"), s1 = g.add_stream(1, "compute");
  auto ok = g.add_task("layer0.fwd", 1.0, cat, {s0});
  auto a = g.add_task("layer1.fwd", 1.0, cat, {s1});
  auto b = g.add_task("layer2.fwd", 1.0, cat, {s1});
  auto c = g.add_task("layer3.fwd", 1.0, cat, {s0});
  g.add_dependency(ok, a);
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  g.add_dependency(c, a);
  EXPECT_EQ(find_dependency_cycle(g).size(), 3u);
  try {
    simulate(g);
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    EXPECT_EQ(e.kind(), DeadlockError::Kind::DependencyCycle);
    EXPECT_EQ(rotated(e.ops(), "layer1.fwd"),
              (std::vector<std::string>{"layer1.fwd", "layer2.fwd", "layer3.fwd"}));
    std::string msg = e.what();
    EXPECT_NE(msg.find("layer1.fwd -> layer2.fwd -> layer3.fwd"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("layer0.fwd"), std::string::npos) << msg;
  }
}

TEST(Deadlock, SelfDependencyIsACycle) {
  TaskGraph g;
  auto t = g.add_task("t", 1.0, g.category("c"), {g.add_stream(0, "s")});
  g.add_dependency(t, t);
  EXPECT_THROW(simulate(g), DeadlockError);
  EXPECT_EQ(find_dependency_cycle(g), std::vector<TaskId>{t});
}

// Two send/recv pairs issued in crossed orders on two ranks' comm streams: rank 0 sends
// first, rank 1 also sends first. Each transfer is one task on both ranks' streams, so
// each waits to reach the head of the other rank's stream. The dependencies are a DAG.
TEST(Deadlock, CrossedStreamOrdersReportStuckHeads) {
  TaskGraph g;
  auto pp = g.category("pp_comm");
  auto c0 = g.add_stream(0, "comm"), c1 = g.add_stream(1, "comm");
  auto p01 = g.add_task("send.0to1", 1.0, pp, {c0, c1});
  auto p10 = g.add_task("send.1to0", 1.0, pp, {c0, c1});
  g.set_program_order(c0, {p01, p10});
  g.set_program_order(c1, {p10, p01});
  EXPECT_TRUE(find_dependency_cycle(g).empty());
  try {
    simulate(g);
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    EXPECT_EQ(e.kind(), DeadlockError::Kind::StuckStreams);
    EXPECT_EQ(rotated(e.ops(), "send.0to1"), (std::vector<std::string>{"send.0to1", "send.1to0"}));
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 of 2 tasks never ran"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank0.comm: head 'send.0to1' waits for 'send.1to0' ahead of it on "
                       "rank1.comm"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("rank1.comm: head 'send.1to0' waits for 'send.0to1' ahead of it on "
                       "rank0.comm"),
              std::string::npos)
        << msg;
  }
}

// Stream A runs a1 then a2, stream B runs b1 then b2, but a1 needs b2 and b1 needs a2:
// an acyclic dependency graph that program order makes impossible. Work that can run
// (warm-up) does, and is not blamed.
TEST(Deadlock, ProgramOrderAgainstDependenciesReportsWaitedOnOps) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto sa = g.add_stream(0, "compute"), sb = g.add_stream(1, "compute");
  g.add_task("warmup", 1.0, cat, {sa});
  auto a1 = g.add_task("a1", 1.0, cat, {sa});
  auto a2 = g.add_task("a2", 1.0, cat, {sa});
  auto b1 = g.add_task("b1", 1.0, cat, {sb});
  auto b2 = g.add_task("b2", 1.0, cat, {sb});
  g.add_dependency(b2, a1);
  g.add_dependency(a2, b1);
  EXPECT_TRUE(find_dependency_cycle(g).empty());
  try {
    simulate(g);
    FAIL() << "expected DeadlockError";
  } catch (const DeadlockError& e) {
    EXPECT_EQ(e.kind(), DeadlockError::Kind::StuckStreams);
    std::string msg = e.what();
    EXPECT_NE(msg.find("4 of 5 tasks never ran"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank0.compute: head 'a1' waits for dependency 'b2'"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("rank1.compute: head 'b1' waits for dependency 'a2'"), std::string::npos)
        << msg;
    EXPECT_FALSE(mentions(msg, "warmup")) << msg;
    // The wait cycle runs a1 -> b2 (dep) -> b1 (ahead on B) -> a2 (dep) -> a1 (ahead on A).
    EXPECT_EQ(rotated(e.ops(), "a1"), (std::vector<std::string>{"a1", "b2", "b1", "a2"}));
  }
}
