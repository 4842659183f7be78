// Identical inputs give identical timelines bit for bit, and the Chrome trace is valid
// JSON with one complete event per task per resource and named tracks.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/engine/chrome_trace.hpp"
#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

namespace {

// Many simultaneous events: equal durations everywhere, a shared link, collectives, and
// durations like 0.1 whose sums round, so any order-dependence would show in the bits.
TaskGraph tie_heavy_graph() {
  TaskGraph g;
  auto compute = g.category("compute"), comm = g.category("dp_comm");
  const int ranks = 6, steps = 40;
  auto link = g.add_link("spine");
  std::vector<ResourceId> cs, ms;
  for (int r = 0; r < ranks; ++r) {
    cs.push_back(g.add_stream(r, "compute"));
    ms.push_back(g.add_stream(r, "comm"));
  }
  std::vector<TaskId> prev(ranks, -1);
  for (int k = 0; k < steps; ++k) {
    for (int r = 0; r < ranks; ++r) {
      std::string tag = std::to_string(k) + "." + std::to_string(r);
      auto w = g.add_task("w" + tag, 0.1 * (1 + k % 3), compute, {cs[r]});
      if (prev[r] >= 0) g.add_dependency(prev[r], w);
      auto x = g.add_task("x" + tag, 0.1, comm, {ms[r], link});
      g.add_dependency(w, x);
      prev[r] = x;
    }
    if (k % 5 == 4) {
      auto ar = g.add_task("allreduce" + std::to_string(k), 0.3, comm, ms);
      for (int r = 0; r < ranks; ++r) g.add_dependency(prev[r], ar);
    }
  }
  return g;
}

std::string trace_of(const TaskGraph& g, const Timeline& tl) {
  std::ostringstream out;
  write_chrome_trace(out, g, tl);
  return out.str();
}

}  // namespace

TEST(Determinism, TwoRunsIdenticalBitForBit) {
  TaskGraph g1 = tie_heavy_graph(), g2 = tie_heavy_graph();
  Timeline a = simulate(g1), b = simulate(g2);
  ASSERT_EQ(a.start_s.size(), b.start_s.size());
  EXPECT_EQ(std::memcmp(a.start_s.data(), b.start_s.data(), a.start_s.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(a.end_s.data(), b.end_s.data(), a.end_s.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&a.makespan_s, &b.makespan_s, sizeof(double)), 0);
  EXPECT_EQ(trace_of(g1, a), trace_of(g2, b));
  // The shared link really was contended: its busy time is the sum of transfers.
  EXPECT_NEAR(a.resource_busy_s[0], 6 * 40 * 0.1, 1e-9);
  EXPECT_GT(a.makespan_s, 6 * 40 * 0.1);
}

TEST(ChromeTrace, ValidJsonWithExpectedEvents) {
  TaskGraph g;
  auto compute = g.category("compute"), tp = g.category("tp_comm");
  auto c0 = g.add_stream(0, "compute"), m0 = g.add_stream(0, "comm");
  auto c1 = g.add_stream(1, "compute"), m1 = g.add_stream(1, "comm");
  auto link = g.add_link("nvlink \"switch\"");  // a name that needs escaping
  auto a = g.add_task("layer3.attn.qkv.fwd", 2e-3, compute, {c0});
  auto b = g.add_task("layer3.attn.qkv.fwd", 3e-3, compute, {c1});
  auto ar = g.add_task("layer3.attn.allreduce", 1.5e-3, tp, {m0, m1, link});
  g.add_dependency(a, ar);
  g.add_dependency(b, ar);
  Timeline tl = simulate(g);

  auto doc = nlohmann::json::parse(trace_of(g, tl));  // throws if invalid
  const auto& events = doc.at("traceEvents");
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  std::vector<nlohmann::json> complete;
  for (const auto& e : events) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
    else if (e.at("ph") == "M" && e.at("name") == "process_name")
      process_names[e.at("pid")] = e.at("args").at("name");
    else if (e.at("ph") == "X")
      complete.push_back(e);
  }
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}, {2, "network"}}));
  EXPECT_EQ(thread_names.size(), 5u);
  EXPECT_EQ((thread_names[{1, c1}]), "compute");
  EXPECT_EQ((thread_names[{2, link}]), "nvlink \"switch\"");
  ASSERT_EQ(complete.size(), 5u);  // 1 + 1 + the all-reduce on 3 resources

  int allreduce_events = 0;
  for (const auto& e : complete) {
    if (e.at("name") != "layer3.attn.allreduce") continue;
    ++allreduce_events;
    EXPECT_EQ(e.at("cat"), "tp_comm");
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 3000.0);  // waits for the 3 ms rank 1
    EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 1500.0);
  }
  EXPECT_EQ(allreduce_events, 3);
  EXPECT_EQ(complete[1].at("pid"), 1);
  EXPECT_EQ(complete[1].at("tid"), c1);
  EXPECT_DOUBLE_EQ(complete[1].at("dur").get<double>(), 3000.0);
}
