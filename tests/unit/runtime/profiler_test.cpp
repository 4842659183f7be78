// The profiler's records, summary and Chrome trace.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "exec/runtime/profiler.hpp"
#include "tests/unit/exec_model/solo_communicator.hpp"

namespace twinsim::exec {
namespace {

using namespace std::chrono_literals;

using test::SoloCommunicator;

TEST(Profiler, RecordsTotalsCountsAndEvents) {
  Profiler p(3);
  const auto t0 = Profiler::Clock::now();
  p.record("layer0.attn.qkv.fwd", t0, t0 + 2ms);
  p.record("layer0.attn.qkv.fwd", t0 + 5ms, t0 + 8ms);
  p.record("layer0.mlp.fc1.bwd_dgrad", t0 + 8ms, t0 + 9ms);

  ASSERT_EQ(p.events().size(), 3u);
  EXPECT_EQ(p.events()[1].name, "layer0.attn.qkv.fwd");
  EXPECT_NEAR(p.events()[1].duration_us, 3000.0, 1e-6);
  EXPECT_NEAR(p.events()[1].start_us - p.events()[0].start_us, 5000.0, 1e-6);
  const OpTotal& qkv = p.totals().find("layer0.attn.qkv.fwd")->second;
  EXPECT_EQ(qkv.count, 2);
  EXPECT_NEAR(qkv.total_s, 0.005, 1e-12);

  const nlohmann::json s = p.summary_json();
  EXPECT_EQ(s["rank"], 3);
  EXPECT_EQ(s["ops"]["layer0.attn.qkv.fwd"]["count"], 2);
  EXPECT_NEAR(s["ops"]["layer0.attn.qkv.fwd"]["mean_s"].get<double>(), 0.0025, 1e-12);
  EXPECT_NEAR(s["ops"]["layer0.mlp.fc1.bwd_dgrad"]["total_s"].get<double>(), 0.001, 1e-12);
}

TEST(Profiler, ScopeTimesAtLeastTheSleep) {
  Profiler p;
  {
    ProfileScope scope(p, "layer1.attn.core.fwd");
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(p.events().size(), 1u);
  EXPECT_GE(p.events()[0].duration_us, 2000.0);  // a sleep never returns early
}

TEST(Profiler, BeginEndNestAndMustMatch) {
  Profiler p;
  p.begin("layer0.fwd");
  p.begin("layer0.attn.norm.fwd");
  p.end("layer0.attn.norm.fwd");
  EXPECT_THROW(p.end("layer0.mlp.fc1.fwd"), std::logic_error);
  p.end("layer0.fwd");
  ASSERT_EQ(p.events().size(), 2u);
  EXPECT_EQ(p.events()[0].name, "layer0.attn.norm.fwd");  // inner op closes first
  EXPECT_LE(p.events()[1].start_us, p.events()[0].start_us);
  EXPECT_GE(p.events()[1].duration_us, p.events()[0].duration_us);
}

TEST(Profiler, DisabledRecordsNothing) {
  Profiler p(0, false);
  { ProfileScope scope(p, "layer0.attn.qkv.fwd"); }
  p.begin("x");
  p.end("x");
  EXPECT_TRUE(p.events().empty());
  EXPECT_TRUE(p.totals().empty());
}

TEST(ChromeTrace, OneTrackPerRankWithCompleteEvents) {
  const nlohmann::json t = chrome_trace({{{"a.fwd", 10.0, 5.0}}, {{"b.fwd", 1.0, 2.0}, {"c.fwd", 4.0, 1.0}}});
  const auto& ev = t["traceEvents"];
  int complete = 0;
  for (const auto& e : ev) {
    if (e["ph"] == "M") {
      EXPECT_EQ(e["args"]["name"], "rank " + std::to_string(e["tid"].get<int>()));
      continue;
    }
    ++complete;
    EXPECT_EQ(e["ph"], "X");
    if (e["name"] == "c.fwd") {
      EXPECT_EQ(e["tid"], 1);
      EXPECT_EQ(e["ts"], 4.0);
      EXPECT_EQ(e["dur"], 1.0);
    }
    if (e["name"] == "a.fwd") {
      EXPECT_EQ(e["tid"], 0);
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(ev.size(), 5u);  // plus one thread_name record per rank
}

TEST(Profiler, GatherOnOneRank) {
  SoloCommunicator comm;
  Profiler p;
  p.align_origin(comm);
  EXPECT_EQ(comm.barriers, 1);
  const auto t0 = Profiler::Clock::now();
  p.record("layer0.attn.proj.bwd_wgrad", t0, t0 + 1ms);
  const nlohmann::json trace = p.gather_chrome_trace(comm);
  ASSERT_EQ(trace["traceEvents"].size(), 2u);
  EXPECT_EQ(trace["traceEvents"][1]["name"], "layer0.attn.proj.bwd_wgrad");
  const nlohmann::json summary = p.gather_summary(comm);
  EXPECT_EQ(summary["ops"]["layer0.attn.proj.bwd_wgrad"]["ranks"], 1);
  EXPECT_NEAR(summary["ops"]["layer0.attn.proj.bwd_wgrad"]["max_total_s"].get<double>(), 0.001, 1e-12);
}

}  // namespace
}  // namespace twinsim::exec
