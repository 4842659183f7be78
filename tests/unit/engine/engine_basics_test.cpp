// Hand-computed timelines for the rules of the engine: dependencies, stream program
// order, rendezvous of collectives, FIFO links, and the exposed-time measure.
#include <gtest/gtest.h>

#include <vector>

#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

TEST(Engine, ChainRunsBackToBack) {
  TaskGraph g;
  auto compute = g.category("compute");
  auto s = g.add_stream(0, "compute");
  auto a = g.add_task("a", 1.0, compute, {s});
  auto b = g.add_task("b", 2.0, compute, {s});
  auto c = g.add_task("c", 3.0, compute, {s});
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s, (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(tl.end_s, (std::vector<double>{1, 3, 6}));
  EXPECT_EQ(tl.makespan_s, 6.0);
  EXPECT_EQ(tl.resource_busy_s[s], 6.0);
  EXPECT_EQ(tl.events, 3u);
}

TEST(Engine, ChainAcrossStreamsWaitsForDependencies) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto s0 = g.add_stream(0, "compute"), s1 = g.add_stream(1, "compute");
  auto a = g.add_task("a", 1.5, cat, {s0});
  auto b = g.add_task("b", 0.5, cat, {s1});  // idle stream, but must wait for a
  g.add_dependency(a, b);
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[b], 1.5);
  EXPECT_EQ(tl.makespan_s, 2.0);
}

// Compute c1, c2 on the compute stream; the gradient all-reduce x of c1's output runs on
// the comm stream while c2 computes: step = max(2 + 2, 2 + 3) = 5, not 2 + 2 + 3.
TEST(Engine, TwoStreamsOverlap) {
  TaskGraph g;
  auto compute = g.category("compute"), dp = g.category("dp_comm");
  auto cs = g.add_stream(0, "compute"), ms = g.add_stream(0, "comm");
  auto c1 = g.add_task("c1", 2.0, compute, {cs});
  auto c2 = g.add_task("c2", 2.0, compute, {cs});
  auto x = g.add_task("x", 3.0, dp, {ms});
  g.add_dependency(c1, x);
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[c2], 2.0);
  EXPECT_EQ(tl.start_s[x], 2.0);
  EXPECT_EQ(tl.makespan_s, 5.0);
  EXPECT_EQ(tl.resource_busy_s[cs], 4.0);
  EXPECT_EQ(tl.resource_busy_s[ms], 3.0);
  EXPECT_EQ(tl.category_total_s[compute], 4.0);
  EXPECT_EQ(tl.category_total_s[dp], 3.0);
}

// A collective is one task on every participant's comm stream: it starts when the slowest
// participant arrives, and later work on any participant's comm stream queues behind it.
TEST(Engine, CollectiveWaitsForSlowestParticipant) {
  TaskGraph g;
  auto compute = g.category("compute"), tp = g.category("tp_comm");
  std::vector<ResourceId> comm;
  std::vector<TaskId> work;
  const double work_s[3] = {1.0, 2.0, 5.0};
  for (int r = 0; r < 3; ++r) {
    auto cs = g.add_stream(r, "compute");
    comm.push_back(g.add_stream(r, "comm"));
    work.push_back(g.add_task("work" + std::to_string(r), work_s[r], compute, {cs}));
  }
  auto allreduce = g.add_task("allreduce", 0.5, tp, comm);
  for (TaskId w : work) g.add_dependency(w, allreduce);
  auto after = g.add_task("rank0.after", 1.0, tp, {comm[0]});  // ready at 0, queued behind
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[allreduce], 5.0);
  EXPECT_EQ(tl.end_s[allreduce], 5.5);
  EXPECT_EQ(tl.start_s[after], 5.5);
  EXPECT_EQ(tl.makespan_s, 6.5);
  for (ResourceId r : comm) EXPECT_EQ(tl.resource_busy_s[r], r == comm[0] ? 1.5 : 0.5);
  EXPECT_EQ(tl.category_total_s[tp], 1.5);  // the collective counts once
}

// b is ready at t=0 but sits behind a on the stream; a waits 10 s for x on another stream.
TEST(Engine, StreamProgramOrderHoldsBackReadyTask) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto s = g.add_stream(0, "compute"), other = g.add_stream(1, "compute");
  auto x = g.add_task("x", 10.0, cat, {other});
  auto a = g.add_task("a", 1.0, cat, {s});
  auto b = g.add_task("b", 2.0, cat, {s});
  g.add_dependency(x, a);
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[a], 10.0);
  EXPECT_EQ(tl.start_s[b], 11.0);
  EXPECT_EQ(tl.makespan_s, 13.0);
}

TEST(Engine, ExplicitProgramOrderReplacesInsertionOrder) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto s = g.add_stream(0, "compute"), other = g.add_stream(1, "compute");
  auto x = g.add_task("x", 10.0, cat, {other});
  auto a = g.add_task("a", 1.0, cat, {s});
  auto b = g.add_task("b", 2.0, cat, {s});
  g.add_dependency(x, a);
  g.set_program_order(s, {b, a});
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[b], 0.0);
  EXPECT_EQ(tl.start_s[a], 10.0);
  EXPECT_EQ(tl.makespan_s, 11.0);
  EXPECT_THROW(g.set_program_order(s, {a}), std::invalid_argument);
  EXPECT_THROW(g.set_program_order(s, {a, a}), std::invalid_argument);
}

// Three transfers from three ranks' comm streams over one shared link: served one at a
// time in the order they became ready (2, 0, 1), not in the order they were added.
TEST(Engine, SharedLinkServesReadyTransfersFirstComeFirstServed) {
  TaskGraph g;
  auto compute = g.category("compute"), pp = g.category("pp_comm");
  auto link = g.add_link("ib.switch0");
  const double ready_at[3] = {1.0, 1.5, 0.5};
  std::vector<TaskId> send;
  for (int r = 0; r < 3; ++r) {
    auto cs = g.add_stream(r, "compute"), ms = g.add_stream(r, "comm");
    auto w = g.add_task("work" + std::to_string(r), ready_at[r], compute, {cs});
    send.push_back(g.add_task("send" + std::to_string(r), 1.0, pp, {ms, link}));
    g.add_dependency(w, send.back());
  }
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[send[2]], 0.5);
  EXPECT_EQ(tl.start_s[send[0]], 1.5);
  EXPECT_EQ(tl.start_s[send[1]], 2.5);
  EXPECT_EQ(tl.makespan_s, 3.5);
  EXPECT_EQ(tl.resource_busy_s[link], 3.0);
}

// A transfer needing two links waits while one is busy; a later transfer needing only the
// free one goes ahead (the link never idles while a waiter could use it).
TEST(Engine, LinkWaiterBlockedElsewhereIsSkipped) {
  TaskGraph g;
  auto cat = g.category("pp_comm");
  auto l1 = g.add_link("l1"), l2 = g.add_link("l2");
  auto s0 = g.add_stream(0, "comm"), s1 = g.add_stream(1, "comm"), s2 = g.add_stream(2, "comm");
  auto hog1 = g.add_task("hog1", 1.0, cat, {s0, l1});
  auto hog2 = g.add_task("hog2", 5.0, cat, {s1, l2});
  auto both = g.add_task("both", 1.0, cat, {s2, l1, l2});  // ready at 0, waits for l2
  auto s3 = g.add_stream(3, "comm");
  auto late = g.add_task("late", 2.0, cat, {s3, l1});  // ready at 0, behind `both` on l1
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[hog1], 0.0);
  EXPECT_EQ(tl.start_s[hog2], 0.0);
  EXPECT_EQ(tl.start_s[late], 1.0);  // l1 freed at 1; `both` still needs l2
  EXPECT_EQ(tl.start_s[both], 5.0);  // l2 frees at 5, l1 at 3
  EXPECT_EQ(tl.makespan_s, 6.0);
}

// Links are granted once an instant's events are all processed: `both` (ready at 0) waits
// for l1 and l2, which free at the same instant 1; `late` (ready at 0.5) waits for l1.
// At 1 both links are free, so the earlier waiter goes first: both [1,2], late [2,4],
// whichever of hog1 and hog2 the engine happens to finish first (the two graphs below
// add them in either order).
TEST(Engine, LinksFreedAtOneInstantGoToTheEarliestWaiter) {
  for (bool swapped : {false, true}) {
    TaskGraph g;
    auto cat = g.category("pp_comm");
    auto l1 = g.add_link("l1"), l2 = g.add_link("l2");
    auto s0 = g.add_stream(0, "comm"), s1 = g.add_stream(1, "comm"), s2 = g.add_stream(2, "comm");
    auto s3 = g.add_stream(3, "comm");
    TaskId hog1 = -1, hog2 = -1;
    if (swapped) hog2 = g.add_task("hog2", 1.0, cat, {s1, l2});
    hog1 = g.add_task("hog1", 1.0, cat, {s0, l1});
    if (!swapped) hog2 = g.add_task("hog2", 1.0, cat, {s1, l2});
    auto both = g.add_task("both", 1.0, cat, {s2, l1, l2});
    auto wait = g.add_task("wait", 0.5, cat, {s3});
    auto late = g.add_task("late", 2.0, cat, {s3, l1});
    Timeline tl = simulate(g);
    EXPECT_EQ(tl.end_s[hog1], 1.0);
    EXPECT_EQ(tl.end_s[hog2], 1.0);
    EXPECT_EQ(tl.end_s[wait], 0.5);
    EXPECT_EQ(tl.start_s[both], 1.0) << swapped;
    EXPECT_EQ(tl.start_s[late], 2.0) << swapped;
    EXPECT_EQ(tl.makespan_s, 4.0);
  }
}

// A link of 2 slots (an uplink of two NIC-rate ports) runs two transfers at once; the
// third, ready at the same instant, waits for a slot: [0,1], [0,1], [1,2].
TEST(Engine, LinkWithSlotsRunsThatManyTasksAtOnce) {
  TaskGraph g;
  auto cat = g.category("pp_comm");
  auto uplink = g.add_link("leaf0.uplink", 2);
  std::vector<TaskId> send;
  for (int r = 0; r < 3; ++r) send.push_back(g.add_task("send" + std::to_string(r), 1.0, cat, {g.add_stream(r, "comm"), uplink}));
  Timeline tl = simulate(g);
  EXPECT_EQ(tl.start_s[send[0]], 0.0);
  EXPECT_EQ(tl.start_s[send[1]], 0.0);
  EXPECT_EQ(tl.start_s[send[2]], 1.0);
  EXPECT_EQ(tl.makespan_s, 2.0);
  EXPECT_EQ(tl.resource_busy_s[uplink], 3.0);  // task-seconds, not wall time
  EXPECT_THROW(g.add_link("none", 0), std::invalid_argument);
}

// compute [0,4]; dp_comm [3,6]; tp_comm [5,7] on a second comm stream.
// dp alone with compute idle: [4,5] -> 1 s. [5,6] has tp too, so it is nobody's alone.
// tp alone with compute idle: [6,7] -> 1 s.
TEST(Engine, ExposedTimeCountsOnlyUncoveredSoleCategory) {
  TaskGraph g;
  auto compute = g.category("compute"), dp = g.category("dp_comm"), tp = g.category("tp_comm");
  auto cs = g.add_stream(0, "compute"), dps = g.add_stream(0, "dp"), tps = g.add_stream(0, "tp");
  auto c = g.add_task("c", 4.0, compute, {cs});
  auto hold_dp = g.add_task("hold_dp", 3.0, compute, {g.add_stream(1, "compute")});
  auto hold_tp = g.add_task("hold_tp", 5.0, compute, {g.add_stream(2, "compute")});
  auto d = g.add_task("d", 3.0, dp, {dps});
  auto t = g.add_task("t", 2.0, tp, {tps});
  g.add_dependency(hold_dp, d);
  g.add_dependency(hold_tp, t);
  Timeline tl = simulate(g);
  ASSERT_EQ(tl.start_s[d], 3.0);
  ASSERT_EQ(tl.start_s[t], 5.0);
  ASSERT_EQ(tl.end_s[c], 4.0);
  std::vector<ResourceId> comm{dps, tps}, covering{cs};
  EXPECT_DOUBLE_EQ(exposed_time(g, tl, dp, comm, covering), 1.0);
  EXPECT_DOUBLE_EQ(exposed_time(g, tl, tp, comm, covering), 1.0);
  EXPECT_DOUBLE_EQ(exposed_time(g, tl, compute, comm, covering), 0.0);
  EXPECT_DOUBLE_EQ(busy_union(g, tl, comm), 4.0);  // [3,7]
  // README's "mixed comm" term: comm busy with compute idle, minus the sole-category parts.
  std::vector<ResourceId> all{dps, tps, cs};
  double mixed = busy_union(g, tl, all) - busy_union(g, tl, covering) - 1.0 - 1.0;
  EXPECT_DOUBLE_EQ(mixed, 1.0);  // [5,6]
}

TEST(Engine, RejectsMalformedTasks) {
  TaskGraph g;
  auto cat = g.category("compute");
  auto s = g.add_stream(0, "compute");
  EXPECT_THROW(g.add_task("neg", -1.0, cat, {s}), std::invalid_argument);
  EXPECT_THROW(g.add_task("nowhere", 1.0, cat, std::span<const ResourceId>{}),
               std::invalid_argument);
  EXPECT_THROW(g.add_task("twice", 1.0, cat, {s, s}), std::invalid_argument);
  EXPECT_THROW(g.add_task("bad_res", 1.0, cat, {7}), std::invalid_argument);
  EXPECT_THROW(g.add_dependency(0, 1), std::invalid_argument);
  std::vector<ResourceId> group;  // a 40-rank collective listing one rank twice
  for (int r = 1; r <= 40; ++r) group.push_back(g.add_stream(r, "comm"));
  EXPECT_NO_THROW(g.add_task("dp.allreduce", 1.0, cat, group));
  group.push_back(group[17]);
  EXPECT_THROW(g.add_task("dp.allreduce.dup", 1.0, cat, group), std::invalid_argument);
  EXPECT_EQ(g.category("compute"), cat);
}

TEST(Engine, EmptyGraphHasZeroMakespan) {
  TaskGraph g;
  EXPECT_EQ(simulate(g).makespan_s, 0.0);
}

namespace twinsim::engine {
namespace {

// The one-sweep version agrees with exposed_time category by category.
TEST(ExposedTimes, AgreesWithExposedTimePerCategory) {
  TaskGraph g;
  const CategoryId work = g.category("compute"), a = g.category("a"), b = g.category("b");
  const ResourceId compute = g.add_stream(0, "compute"), comm1 = g.add_stream(0, "c1"), comm2 = g.add_stream(0, "c2");
  const TaskId w1 = g.add_task("w1", 2.0, work, {compute});
  g.add_task("w2", 1.0, work, {compute});
  g.add_task("x", 5.0, a, {comm1});                   // 0..5, compute covers 0..3
  const TaskId y = g.add_task("y", 3.0, b, {comm2});
  g.add_dependency(w1, y);                              // y runs 2..5: x is never exposed alone
  const Timeline tl = simulate(g);
  const std::vector<ResourceId> watched{comm1, comm2}, covering{compute};
  const std::vector<double> all = exposed_times(g, tl, watched, covering);
  for (CategoryId c : {work, a, b}) EXPECT_DOUBLE_EQ(all[c], exposed_time(g, tl, c, watched, covering));
  EXPECT_DOUBLE_EQ(all[a], 0.0);  // 3..5 both a and b run: neither is exposed alone
}


// The sweeps take one stream's tasks in program order, which need not be the order they were
// added in (set_program_order), and sort what may come out of time order: a link's tasks run
// first come, first served. compute runs c3 [0,2], c1 [2,3], c2 [3,4]; the link l2 [0,1],
// then l1 [3,4] once its 3 s hold is over; dp_comm runs [0,5].
TEST(ExposedTimes, TakeTheOrderTasksRanInNotTheOrderTheyWereAdded) {
  TaskGraph g;
  const CategoryId work = g.category("compute"), dp = g.category("dp_comm");
  const ResourceId compute = g.add_stream(0, "compute"), comm = g.add_stream(0, "dp"), link = g.add_link("nic");
  const TaskId c1 = g.add_task("c1", 1.0, work, {compute}), c2 = g.add_task("c2", 1.0, work, {compute});
  const TaskId c3 = g.add_task("c3", 2.0, work, {compute});
  g.set_program_order(compute, {c3, c1, c2});
  const TaskId hold = g.add_task("hold", 3.0, work, {g.add_stream(1, "compute")});
  const TaskId l1 = g.add_task("l1", 1.0, work, {link}), l2 = g.add_task("l2", 1.0, work, {link});
  g.add_dependency(hold, l1);
  g.add_task("d", 5.0, dp, {comm});
  const Timeline tl = simulate(g);
  ASSERT_EQ(tl.start_s[c1], 2.0);
  ASSERT_EQ(tl.start_s[l1], 3.0);
  ASSERT_EQ(tl.start_s[l2], 0.0);
  const std::vector<ResourceId> watched{comm}, by_compute{compute}, by_link{link};
  EXPECT_DOUBLE_EQ(exposed_time(g, tl, dp, watched, by_compute), 1.0);  // [4,5]
  EXPECT_DOUBLE_EQ(exposed_time(g, tl, dp, watched, by_link), 3.0);     // [1,3] and [4,5]
  EXPECT_DOUBLE_EQ(exposed_times(g, tl, watched, by_compute)[dp], 1.0);
  EXPECT_DOUBLE_EQ(exposed_times(g, tl, watched, by_link)[dp], 3.0);
  EXPECT_DOUBLE_EQ(busy_union(g, tl, by_link), 2.0);
  EXPECT_DOUBLE_EQ(busy_union(g, tl, by_compute), 4.0);
}

}  // namespace
}  // namespace twinsim::engine
