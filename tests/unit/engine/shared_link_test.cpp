// Shared links (TaskGraph::add_shared_link): every task on one runs at once, each at
// min(1, capacity / load) of its full rate, re-timed when the load changes; a task standing
// for copies (TaskGraph::set_copies) weighs as that many. Timelines derived by hand.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "tests/unit/engine/thread_exchange.hpp"

using namespace twinsim::engine;

namespace {

struct Net {
  TaskGraph g;
  CategoryId cat = g.category("comm");
  std::vector<ResourceId> streams;
  explicit Net(int ranks) {
    for (int r = 0; r < ranks; ++r) streams.push_back(g.add_stream(r, "comm"));
  }
};

}  // namespace

TEST(SharedLink, TwoTransfersOnOneSlotShareItAndEndTogether) {
  Net n(2);
  const ResourceId up = n.g.add_shared_link("leaf0.uplink", 1);
  const TaskId a = n.g.add_task("a", 1.0, n.cat, {n.streams[0], up});
  const TaskId b = n.g.add_task("b", 1.0, n.cat, {n.streams[1], up});
  const Timeline tl = simulate(n.g);
  // each at half rate: 1 s of work takes 2 s (a FIFO link would end them at 1 and 2)
  EXPECT_DOUBLE_EQ(tl.start_s[a], 0.0);
  EXPECT_DOUBLE_EQ(tl.start_s[b], 0.0);
  EXPECT_DOUBLE_EQ(tl.end_s[a], 2.0);
  EXPECT_DOUBLE_EQ(tl.end_s[b], 2.0);
  EXPECT_DOUBLE_EQ(tl.slowed_s[a], 1.0);
  EXPECT_EQ(tl.events, 2u);
}

TEST(SharedLink, UnderCapacityNobodyIsSlowed) {
  Net n(3);
  const ResourceId up = n.g.add_shared_link("leaf0.uplink", 3);
  for (int r = 0; r < 3; ++r) n.g.add_task("t", 1.0, n.cat, {n.streams[r], up});
  EXPECT_DOUBLE_EQ(simulate(n.g).makespan_s, 1.0);
}

TEST(SharedLink, ALateArrivalSlowsTheRunningTransferFromThenOn) {
  Net n(2);
  const ResourceId up = n.g.add_shared_link("up", 1);
  const TaskId a = n.g.add_task("a", 2.0, n.cat, {n.streams[0], up});
  const TaskId before = n.g.add_task("before", 1.0, n.cat, {n.streams[1]});
  const TaskId b = n.g.add_task("b", 0.5, n.cat, {n.streams[1], up});
  const Timeline tl = simulate(n.g);
  // 0..1 a alone (1 of 2 done); 1..2 both at half rate: b's 0.5 done at 2, a has 0.5 more
  // at full rate: 2.5
  EXPECT_DOUBLE_EQ(tl.start_s[b], 1.0);
  EXPECT_DOUBLE_EQ(tl.end_s[b], 2.0);
  EXPECT_DOUBLE_EQ(tl.end_s[a], 2.5);
  EXPECT_DOUBLE_EQ(tl.end_s[before], 1.0);
}

TEST(SharedLink, ATaskOnTwoLinksRunsAtItsMostCrowdedShare) {
  Net n(4);
  const ResourceId x = n.g.add_shared_link("x", 2), y = n.g.add_shared_link("y", 1);
  const TaskId both = n.g.add_task("both", 1.0, n.cat, {n.streams[0], x, y});
  const TaskId on_x = n.g.add_task("on_x", 1.0, n.cat, {n.streams[1], x});
  const TaskId on_y = n.g.add_task("on_y", 3.0, n.cat, {n.streams[2], y});
  const Timeline tl = simulate(n.g);
  // x: load 2 of 2 (full rate); y: load 2 of 1 (half): `both` at half rate ends at 2, on_x
  // at 1; on_y at half rate until 2 (1 done), then alone: 2 more, ends at 4
  EXPECT_DOUBLE_EQ(tl.end_s[on_x], 1.0);
  EXPECT_DOUBLE_EQ(tl.end_s[both], 2.0);
  EXPECT_DOUBLE_EQ(tl.end_s[on_y], 4.0);
}

TEST(SharedLink, InterferenceAndSharingMultiply) {
  TaskGraph g;
  const CategoryId cat = g.category("work");
  const ResourceId compute = g.add_stream(0, "compute"), comm = g.add_stream(0, "dp_comm");
  const std::vector<ResourceId> interferers{comm};
  g.add_interference(compute, interferers, 2.0);
  const ResourceId up = g.add_shared_link("up", 1);
  const TaskId blocking = g.add_task("blocking", 1.0, cat, {compute, up});
  const TaskId side = g.add_task("side", 1.0, cat, {comm, up});
  const Timeline tl = simulate(g);
  // both on `up` (half rate); `blocking` also slowed 2x while `side` runs: side ends at 2,
  // blocking did 2 / 4 = 0.5 by then and the other 0.5 alone: 2.5
  EXPECT_DOUBLE_EQ(tl.end_s[side], 2.0);
  EXPECT_DOUBLE_EQ(tl.end_s[blocking], 2.5);
}

// Four alike chains (a compute task, then a transfer through their own FIFO NIC and a
// shared uplink of capacity 2) against one chain whose transfer stands for four copies:
// the same times, exactly. Each transfer runs at 2/4 of its rate: 1 + 2 x 1.5 = 4.
TEST(SharedLink, OneTaskWithCopiesRunsAsTheCopiesDo) {
  auto chains = [](int simulated, int copies) {
    Net n(simulated);
    const ResourceId up = n.g.add_shared_link("up", 2);
    std::vector<TaskId> sends;
    for (int r = 0; r < simulated; ++r) {
      const ResourceId nic = n.g.add_link("nic" + std::to_string(r));
      const TaskId work = n.g.add_task("work", 1.0, n.cat, {n.streams[r]});
      const TaskId send = n.g.add_task("send", 1.5, n.cat, {n.streams[r], nic, up});
      n.g.set_copies(send, up, copies);
      n.g.add_dependency(work, send);
      sends.push_back(send);
    }
    const Timeline tl = simulate(n.g);
    std::vector<double> ends;
    for (TaskId t : sends) ends.push_back(tl.end_s[t]);
    return ends;
  };
  const std::vector<double> every = chains(4, 1), folded = chains(1, 4);
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_DOUBLE_EQ(folded[0], 4.0);
  for (double end : every) EXPECT_EQ(end, folded[0]);
}

TEST(SharedLink, CopiesOnlyOnASharedLinkOfTheTask) {
  Net n(1);
  const ResourceId fifo = n.g.add_link("nic"), up = n.g.add_shared_link("up", 1), other = n.g.add_shared_link("o", 1);
  const TaskId t = n.g.add_task("t", 1.0, n.cat, {n.streams[0], fifo, up});
  EXPECT_THROW(n.g.set_copies(t, fifo, 2), std::invalid_argument);
  EXPECT_THROW(n.g.set_copies(t, other, 2), std::invalid_argument);
  EXPECT_THROW(n.g.set_copies(t, up, 0), std::invalid_argument);
  EXPECT_THROW(n.g.add_shared_link("none", 0), std::invalid_argument);
  n.g.set_copies(t, up, 3);
  EXPECT_EQ(n.g.copies(t, 2), 3);
  EXPECT_EQ(n.g.copies(t, 1), 1);
}

// Split over two processes (threads), ranks 0-1 on one and 2-3 on the other, sharing one
// uplink: the same timeline as one process.
TEST(SharedLink, SplitRunEqualsOneProcess) {
  Net n(4);
  const ResourceId up = n.g.add_shared_link("up", 1);
  TaskId last = -1;
  for (int r = 0; r < 4; ++r) {
    const TaskId work = n.g.add_task("work", 0.25 * (r + 1), n.cat, {n.streams[r]});
    const TaskId send = n.g.add_task("send", 1.0, n.cat, {n.streams[r], up});
    n.g.add_dependency(work, send);
    if (last >= 0) n.g.add_dependency(last, work);
    last = r == 1 ? send : -1;
  }
  const Timeline alone = simulate(n.g);
  twinsim::Table table(2);
  std::vector<Timeline> split(2);
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p)
    threads.emplace_back([&, p] {
      twinsim::ThreadExchange ex(table, p);
      split[p] = simulate(n.g, ex, [](int rank) { return rank / 2; });
    });
  for (auto& t : threads) t.join();
  for (const Timeline& tl : split) {
    ASSERT_EQ(tl.end_s.size(), alone.end_s.size());
    for (std::size_t t = 0; t < alone.end_s.size(); ++t) {
      EXPECT_EQ(tl.start_s[t], alone.start_s[t]) << t;
      EXPECT_EQ(tl.end_s[t], alone.end_s[t]) << t;
    }
  }
}
