// The enumerator generates exactly the plans the scenario validator accepts: every
// candidate passes resolve_and_validate, and a naive loop over all knob values (kept
// only when the validator accepts them) finds no plan the enumerator missed.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "scenario/validate.hpp"
#include "sim/search/search_space.hpp"

namespace twinsim {
namespace {

// 12 layers, 8 heads (4 KV heads), FFN 1536, seq 512, batch 16 on 8-GPU nodes.
// `stack`: hf-eager (and hf-deepspeed, the same code on a bf16 model) runs data parallelism
// only (tp = pp = cp = 1) and no selective recompute.
Scenario small(const std::string& stack = "none") {
  return load_scenario_text(R"(
model: {layers: 12, hidden: 512, heads: 8, kv_heads: 4, ffn_hidden: 1536, vocab: 1000,
        activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied_embeddings: false}
cluster: dgx-h100
training: {seq_len: 512, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
stack: )" + stack + "\n");
}

using Key = std::tuple<int, int, int, int, int, int, int, int, bool>;  // tp pp dp cp mb sched v zero sp
Key key(const Candidate& c) {
  return {c.tp, c.pp, c.dp, c.cp, c.micro_batch, static_cast<int>(c.schedule), c.virtual_stages, c.zero,
          c.sequence_parallel};
}

void expect_every_candidate_valid(const Scenario& base, std::int64_t at_least) {
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_cp = 4, o.max_micro_batch = 4;
  const SearchSpace space = make_search_space(base, o);
  std::int64_t n = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    ++n;
    EXPECT_NO_THROW(candidate_scenario(base, c)) << describe(c);
  });
  EXPECT_GT(n, at_least);
}

TEST(SearchSpace, EveryCandidatePassesTheValidator) { expect_every_candidate_valid(small(), 1000); }
TEST(SearchSpace, EveryHfEagerCandidatePassesTheValidator) { expect_every_candidate_valid(small("hf-eager"), 50); }
TEST(SearchSpace, EveryHfBf16CandidatePassesTheValidator) { expect_every_candidate_valid(small("hf-deepspeed"), 50); }

// `twinsim search --offload`: hf-deepspeed's plans try DeepSpeed's optimizer offload, which
// its bf16 model counts, never Megatron-core's activation offload; hf-eager's try neither.
TEST(SearchSpace, HfBf16TriesOptimizerOffloadOnly) {
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_cp = 4, o.max_micro_batch = 4, o.consider_offload = true;
  for (const std::string stack : {"hf-deepspeed", "hf-eager"}) {
    const Scenario base = small(stack);
    std::int64_t offloaded = 0;
    for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
      offloaded += c.offload_optimizer ? 1 : 0;
      EXPECT_EQ(c.offload_activations_layers, 0) << stack << " " << describe(c);
      EXPECT_NO_THROW(candidate_scenario(base, c)) << stack << " " << describe(c);
    });
    if (stack == "hf-deepspeed") { EXPECT_GT(offloaded, 0); }
    if (stack == "hf-eager") { EXPECT_EQ(offloaded, 0); }
  }
}

void expect_naive_loop_finds_nothing_missing(const Scenario& base) {
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_cp = 4, o.max_micro_batch = 4;
  std::set<Key> generated;
  for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
    if (c.recompute == Recompute::none && c.overlap_grad_reduce && c.overlap_param_gather && !c.tp_comm_overlap)
      generated.insert(key(c));
  });
  std::set<Key> accepted;
  const Schedule schedules[] = {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved};
  for (int tp = 1; tp <= 8; ++tp)
    for (int pp = 1; pp <= 12; ++pp)
      for (int cp = 1; cp <= 4; ++cp)
        for (int dp = 1; dp <= 16; ++dp) {
          if (tp * pp * cp * dp > 16) continue;
          for (int mb = 1; mb <= 4; ++mb)
            for (Schedule sch : schedules)
              for (int v = 1; v <= 6; ++v)
                for (int zero = 0; zero <= 3; ++zero)
                  for (int sp = 0; sp <= 1; ++sp) {
                    Candidate c;
                    c.tp = tp, c.pp = pp, c.cp = cp, c.dp = dp, c.micro_batch = mb, c.schedule = sch;
                    c.virtual_stages = v, c.zero = zero, c.sequence_parallel = sp == 1;
                    try {
                      candidate_scenario(base, c);
                    } catch (const ScenarioError&) {
                      continue;
                    }
                    // knobs that change nothing are not varied by the enumerator
                    if (zero > 0 && dp * cp == 1) continue;
                    if (sp && tp == 1) continue;
                    // one stage: 1F1B only (Megatron's no-pipelining schedule; GPipe's memory is worse)
                    if (pp == 1 && sch != Schedule::one_f_one_b) continue;
                    if (sch == Schedule::interleaved && v == 1) continue;
                    // the search offers even chunks only; scenarios may split unevenly
                    if (sch == Schedule::interleaved && (base.model.layers / pp) % v != 0) continue;
                    accepted.insert(key(c));
                  }
        }
  EXPECT_EQ(generated, accepted);
}

TEST(SearchSpace, NaiveLoopFindsNothingMissing) { expect_naive_loop_finds_nothing_missing(small()); }
TEST(SearchSpace, NaiveLoopFindsNothingMissingUnderHfEager) {
  expect_naive_loop_finds_nothing_missing(small("hf-eager"));
}

TEST(SearchSpace, ShardsPartitionTheSpace) {
  const Scenario base = small();
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_cp = 2, o.max_micro_batch = 2;
  const std::int64_t whole = count_candidates(make_search_space(base, o));
  std::int64_t parts = 0;
  for (int i = 0; i < 3; ++i) {
    o.shard_index = i, o.shard_count = 3;
    parts += count_candidates(make_search_space(base, o));
  }
  EXPECT_EQ(parts, whole);
}

}  // namespace
}  // namespace twinsim
