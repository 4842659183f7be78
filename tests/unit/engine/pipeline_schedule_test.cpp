// Pipeline schedules built by hand on the engine: p stages, m micro-batches, forward f
// and backward b = 2f per stage, free point-to-point transfers (the idealised setting of
// Narayanan et al. 2021 §2.2.1 and Huang et al. 2019 GPipe §2.3). The bubble must come
// out of the stream program orders, not from a formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

namespace {

struct Pipeline {
  TaskGraph graph;
  std::vector<ResourceId> stage;        // compute stream of each stage
  std::vector<std::vector<TaskId>> fwd;  // fwd[s][i]: forward of micro-batch i on stage s
  std::vector<std::vector<TaskId>> bwd;
};

// Forward and backward ops with their data dependencies; program orders set by caller.
Pipeline build_pipeline(int p, int m, double f) {
  Pipeline pl;
  auto& g = pl.graph;
  auto compute = g.category("compute");
  pl.fwd.assign(p, std::vector<TaskId>(m));
  pl.bwd.assign(p, std::vector<TaskId>(m));
  for (int s = 0; s < p; ++s) {
    pl.stage.push_back(g.add_stream(s, "compute"));
    for (int i = 0; i < m; ++i) {
      auto tag = "stage" + std::to_string(s) + ".mb" + std::to_string(i);
      pl.fwd[s][i] = g.add_task(tag + ".fwd", f, compute, {pl.stage[s]});
      pl.bwd[s][i] = g.add_task(tag + ".bwd", 2 * f, compute, {pl.stage[s]});
    }
  }
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < m; ++i) {
      if (s > 0) g.add_dependency(pl.fwd[s - 1][i], pl.fwd[s][i]);  // activations flow down
      if (s + 1 < p) g.add_dependency(pl.bwd[s + 1][i], pl.bwd[s][i]);  // gradients flow up
      g.add_dependency(pl.fwd[s][i], pl.bwd[s][i]);
    }
  return pl;
}

// GPipe: all forwards, then all backwards (Huang et al. 2019, Fig. 2c).
void order_gpipe(Pipeline& pl, int p) {
  for (int s = 0; s < p; ++s) {
    std::vector<TaskId> order(pl.fwd[s]);
    order.insert(order.end(), pl.bwd[s].begin(), pl.bwd[s].end());
    pl.graph.set_program_order(pl.stage[s], order);
  }
}

// 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2.1, Fig. 4 top): p - s - 1 warm-up
// forwards, then alternate one forward and one backward, then drain the backwards.
void order_1f1b(Pipeline& pl, int p, int m) {
  for (int s = 0; s < p; ++s) {
    int warmup = std::min(p - s - 1, m);
    std::vector<TaskId> order;
    for (int i = 0; i < warmup; ++i) order.push_back(pl.fwd[s][i]);
    for (int i = 0; i < m - warmup; ++i) {
      order.push_back(pl.fwd[s][warmup + i]);
      order.push_back(pl.bwd[s][i]);
    }
    for (int i = m - warmup; i < m; ++i) order.push_back(pl.bwd[s][i]);
    pl.graph.set_program_order(pl.stage[s], order);
  }
}

// Most micro-batches whose activations stage s holds at once: forward started, backward
// not yet finished. This is what bounds activation memory.
int max_in_flight(const Pipeline& pl, const Timeline& tl, int s) {
  int m = static_cast<int>(pl.fwd[s].size()), most = 0;
  for (int i = 0; i < m; ++i) {
    double t = tl.start_s[pl.fwd[s][i]];
    int held = 0;
    for (int j = 0; j < m; ++j)
      held += tl.start_s[pl.fwd[s][j]] <= t && tl.end_s[pl.bwd[s][j]] > t;
    most = std::max(most, held);
  }
  return most;
}

const std::pair<int, int> kShapes[] = {{4, 8}, {2, 1}, {3, 5}, {8, 16}, {4, 4}};

}  // namespace

// Makespan (m + p - 1)(f + b): the last micro-batch leaves the last stage after m + p - 1
// forward slots and the gradients need m + p - 1 backward slots to reach stage 0; the
// bubble fraction of each stage is (p - 1)/(m + p - 1) (Huang et al. 2019 §2.3;
// Narayanan et al. 2021 §2.2.1 gives it relative to the ideal time as (p - 1)/m).
TEST(PipelineSchedule, GPipeMakespanAndBubble) {
  const double f = 1.0;
  for (auto [p, m] : kShapes) {
    Pipeline pl = build_pipeline(p, m, f);
    order_gpipe(pl, p);
    Timeline tl = simulate(pl.graph);
    EXPECT_DOUBLE_EQ(tl.makespan_s, (m + p - 1) * 3 * f) << "p=" << p << " m=" << m;
    for (int s = 0; s < p; ++s) {
      double idle = tl.makespan_s - tl.resource_busy_s[pl.stage[s]];
      EXPECT_DOUBLE_EQ(idle / tl.makespan_s, double(p - 1) / (m + p - 1));
      EXPECT_DOUBLE_EQ(idle / (m * 3 * f), double(p - 1) / m);
    }
    EXPECT_EQ(max_in_flight(pl, tl, 0), m);  // GPipe stashes every micro-batch
  }
}

// Worked example p = 4, m = 8, f = 1: the last stage starts forwards at t = 3 and the
// first backward reaches stage 0 at t = 11 + 3 * 2 = 17.
TEST(PipelineSchedule, GPipeHandTimes) {
  Pipeline pl = build_pipeline(4, 8, 1.0);
  order_gpipe(pl, 4);
  Timeline tl = simulate(pl.graph);
  EXPECT_EQ(tl.start_s[pl.fwd[3][0]], 3.0);
  EXPECT_EQ(tl.end_s[pl.fwd[3][7]], 11.0);
  EXPECT_EQ(tl.start_s[pl.bwd[3][0]], 11.0);
  EXPECT_EQ(tl.start_s[pl.bwd[0][0]], 17.0);
  EXPECT_EQ(tl.makespan_s, 33.0);
}

// Same bubble as GPipe, but stage s holds at most p - s micro-batches instead of m
// (Narayanan et al. 2021 §2.2.1: "the bubble is the same ... in-flight micro-batches
// reduced to p").
TEST(PipelineSchedule, OneFOneBSameMakespanFewerInFlight) {
  const double f = 1.0;
  for (auto [p, m] : kShapes) {
    Pipeline pl = build_pipeline(p, m, f);
    order_1f1b(pl, p, m);
    Timeline tl = simulate(pl.graph);
    EXPECT_DOUBLE_EQ(tl.makespan_s, (m + p - 1) * 3 * f) << "p=" << p << " m=" << m;
    for (int s = 0; s < p; ++s) EXPECT_EQ(max_in_flight(pl, tl, s), std::min(p - s, m));
  }
}
