// DualPipe's order (deepseek-ai/DualPipe 3da1bbe, dualpipe/dualpipe.py, DualPipe.step), its
// bubble against the README's table on a toy cost, and the activations it keeps.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "sim/training/dualpipe_schedule.hpp"

namespace twinsim {
namespace {

// "F0:3" a forward of chunk 0, micro-batch 3; a '*' marks the slots of an overlapped pair.
std::string dualpipe_text(const std::vector<PipelineSlot>& order) {
  std::string out;
  for (const PipelineSlot& s : order)
    out += (out.empty() ? "" : " ") + std::string(s.forward ? "F" : "B") + std::to_string(s.chunk) + ":" +
           std::to_string(s.micro_batch) + (s.overlapped ? "*" : "");
  return out;
}

TEST(DualPipeSchedule, FourRanksEightMicroBatchesFollowDualpipePy) {
  // Derived by hand from DualPipe.step with num_ranks 4, num_chunks 8 (half_num_chunks 4,
  // micro-batches 0-3 enter at rank 0 on chunk 0, 4-7 at rank 3 on chunk 1). Rank 0
  // (half_rank 0, not middle): step 1 (2-0-1)*2 = 2 F0; step 2 one F0 F1; step 3 one B1 W F1;
  // step 4 4-4+0+1 = 1 round of F0&B1, F1&B0; step 5 one B1, F1&B0; step 6 one B1 B0; step 7
  // one W B0. Rank 1 (middle): step 2 two F0 F1; step 4 two rounds, the first F0 and B1 apart
  // ("We don't overlap these two chunks"); step 6 two B1 B0. Ranks 2 and 3 mirror 1 and 0 with
  // the phases flipped (is_in_second_half), so their phase 0 is chunk 1.
  EXPECT_EQ(dualpipe_text(dualpipe_schedule(4, 0, 8)),
            "F0:0 F0:1 F0:2 F1:4 B1:4 F1:5 F0:3* B1:5* F1:6* B0:0* B1:6 F1:7* B0:1* B1:7 B0:2 B0:3");
  EXPECT_EQ(dualpipe_text(dualpipe_schedule(4, 1, 8)),
            "F0:0 F1:4 F0:1 F1:5 F0:2 B1:4 F1:6* B0:0* F0:3* B1:5* F1:7* B0:1* B1:6 B0:2 B1:7 B0:3");
  EXPECT_EQ(dualpipe_text(dualpipe_schedule(4, 2, 8)),
            "F1:4 F0:0 F1:5 F0:1 F1:6 B0:0 F0:2* B1:4* F1:7* B0:1* F0:3* B1:5* B0:2 B1:6 B0:3 B1:7");
  EXPECT_EQ(dualpipe_text(dualpipe_schedule(4, 3, 8)),
            "F1:4 F1:5 F1:6 F0:0 B0:0 F0:1 F1:7* B0:1* F0:2* B1:4* B0:2 F0:3* B1:5* B0:3 B1:6 B1:7");
}

// A toy run of every rank's order: a forward takes `f`, a backward `b`, an overlapped pair
// `fb`; a forward waits for the rank before it in its direction, a backward for the rank after
// it; transfers are free. Returns the step time and each rank's busy time.
struct DualPipeToyRun {
  double step = 0;
  std::vector<double> busy;
};

DualPipeToyRun dualpipe_toy_run(int pp, int m, double f, double b, double fb) {
  std::vector<std::vector<PipelineSlot>> order(pp);
  for (int r = 0; r < pp; ++r) order[r] = dualpipe_schedule(pp, r, m);
  std::map<std::tuple<int, int, bool>, double> done;  // (rank, micro-batch, forward) -> end
  auto ready = [&](int r, const PipelineSlot& s, double& t) {
    const int step = (s.chunk == 0) == s.forward ? -1 : 1;  // the rank this slot's input comes from
    const int from = r + step;
    if (from < 0 || from >= pp) return true;
    const auto it = done.find({from, s.micro_batch, s.forward});
    if (it == done.end()) return false;
    t = std::max(t, it->second);
    return true;
  };
  std::vector<std::size_t> next(pp, 0);
  DualPipeToyRun run;
  std::vector<double> free(pp, 0);
  run.busy.assign(pp, 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < pp; ++r) {
      if (next[r] >= order[r].size()) continue;
      const PipelineSlot& s = order[r][next[r]];
      const int slots = s.overlapped ? 2 : 1;
      double start = free[r];
      bool inputs = true;
      for (int k = 0; k < slots; ++k) inputs = ready(r, order[r][next[r] + k], start) && inputs;
      if (!inputs) continue;
      const double seconds = s.overlapped ? fb : s.forward ? f : b;
      free[r] = start + seconds;
      run.busy[r] += seconds;
      for (int k = 0; k < slots; ++k)
        done[{r, order[r][next[r] + k].micro_batch, order[r][next[r] + k].forward}] = free[r];
      next[r] += slots;
      moved = true;
    }
  }
  for (int r = 0; r < pp; ++r) {
    EXPECT_EQ(next[r], order[r].size()) << "rank " << r << " waits for ever";
    run.step = std::max(run.step, free[r]);
  }
  return run;
}

TEST(DualPipeSchedule, BubbleIsTheReadmeFormulaOnAToyCost) {
  // README table: DualPipe's bubble (PP/2-1)(F&B + B - 3W). Toy: F = B = 1, W = 0 (the weight
  // gradients stay in the backward), F&B = 2 (no overlap gain): (PP/2-1) * 3, i.e. 3 at PP 4,
  // 9 at PP 8, 21 at PP 16, whatever the micro-batches (2 PP and 4 PP). Every rank is busy
  // m * (F + B) = 2m minus what its overlapped pairs share (nothing here).
  for (int pp : {4, 8, 16})
    for (int m : {2 * pp, 4 * pp}) {
      const DualPipeToyRun run = dualpipe_toy_run(pp, m, 1, 1, 2);
      const double bubble = (pp / 2 - 1) * (2.0 + 1.0);
      for (int r = 0; r < pp; ++r) {
        EXPECT_DOUBLE_EQ(run.busy[r], 2.0 * m) << "pp " << pp << " rank " << r;
        EXPECT_DOUBLE_EQ(run.step - run.busy[r], bubble) << "pp " << pp << " m " << m << " rank " << r;
      }
    }
}

TEST(DualPipeSchedule, OverlappedPairsShortenTheStep) {
  // pp 4, m 8, F = B = 1: rank 0 runs 3 overlapped pairs (the order above), so with
  // F&B = 1.5 it is busy 16 - 3 * 0.5 = 14.5; its bubble is then (4/2-1)(1.5 + 1) = 2.5 by the
  // README's formula.
  const DualPipeToyRun run = dualpipe_toy_run(4, 8, 1, 1, 1.5);
  EXPECT_DOUBLE_EQ(run.busy[0], 14.5);
  EXPECT_DOUBLE_EQ(run.step - run.busy[0], 2.5);
}

TEST(DualPipeSchedule, EachRankKeepsPipelineDepthPlusOneChunks) {
  // README table: activations per device PP + 1 (in one stage's, i.e. one chunk's, units)
  for (int pp : {2, 4, 8, 16})
    for (int r = 0; r < pp; ++r) EXPECT_EQ(peak_in_flight(dualpipe_schedule(pp, r, 4 * pp)), pp + 1) << pp << " " << r;
}

}  // namespace
}  // namespace twinsim
