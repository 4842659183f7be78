// KV-cache decoding under tensor parallelism (mpirun -np 2): each rank's logit shard at
// every length equals the TP2 training forward re-run on the growing sequence, and greedy
// tokens agree across ranks; under expert parallelism each rank's own sequences' logits
// equal the one-rank forward. Exit status 0 on success.
#include <cmath>
#include <cstdio>
#include <string>

#include "exec/model/decoder.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "tests/unit/exec_model/decoder_reference.hpp"
#include "tests/unit/exec_model/tiny_models.hpp"

using namespace twinsim;
using namespace twinsim::exec;

constexpr int kPrompt = 3, kTotal = 8;

// micro_batch sequences of kTotal tokens; `salt` makes another rank's differ
std::vector<int> sequences(const TransformerConfig& c, int salt) {
  std::vector<int> all;
  for (int b = 0; b < c.micro_batch; ++b)
    for (int j = 0; j < kTotal; ++j) all.push_back((11 * b + 3 * j * j + 7 * salt + 1) % static_cast<int>(c.model.vocab));
  return all;
}

// Decodes `all` on `c`'s stage from a kPrompt-token prompt, one step per length, and compares
// each step's logits with the full forward of `reference` (under `reference_ctx`) at that
// length; after_step(logits) adds its own checks. Returns the mismatches.
template <class AfterStep>
int decode_against_full_forward(const TransformerConfig& c, const ModelContext& ctx, const TransformerConfig& reference,
                                const ModelContext& reference_ctx, const std::vector<int>& all, const char* what,
                                AfterStep after_step) {
  TransformerStage stage(c);
  stage.initialize();
  Decoder decoder(stage, c.micro_batch, kTotal);
  int failures = 0;
  for (int len = kPrompt; len <= kTotal; ++len) {
    const int first = decoder.length();
    std::vector<int> step;
    for (int b = 0; b < c.micro_batch; ++b)
      for (int j = first; j < len; ++j) step.push_back(all[b * kTotal + j]);
    const Tensor logits = decoder.forward(ctx, step.data(), len - first);
    const std::vector<float> ref = test::full_forward_last_logits(reference, reference_ctx, all, kTotal, len);
    float scale = 0;
    for (float v : ref) scale = std::max(scale, std::abs(v));
    const float diff = test::max_abs_diff(test::host_values(ctx, logits).data(), ref);
    if (!(diff <= 1e-5f * scale)) {
      std::fprintf(stderr, "%s %s length %d: max |cached - full| = %g > 1e-5 * %g\n", c.model.name.c_str(), what, len,
                   diff, scale);
      ++failures;
    }
    failures += after_step(logits);
  }
  return failures;
}

int check(TransformerConfig c, Communicator& tp) {
  c.tp = tp.size();
  c.tp_rank = tp.rank();
  const ModelContext ctx{&tp};
  const std::string what = "TP rank " + std::to_string(tp.rank());
  return decode_against_full_forward(c, ctx, c, ctx, sequences(c, 0), what.c_str(), [&](const Tensor& logits) {
    int failures = 0;
    const std::vector<int> next = greedy_tokens(ctx, logits.data(), c.micro_batch, c.local_vocab(), c.vocab_start());
    for (int t : next) {
      float mine = static_cast<float>(t), top = mine;
      tp.all_reduce(&top, 1, ReduceOp::max);
      if (top != mine) {
        std::fprintf(stderr, "rank %d: greedy token %d differs from another rank's\n", tp.rank(), t);
        ++failures;
      }
    }
    return failures;
  });
}

// Expert parallelism over the same two ranks (ep 2, each holding half the experts): each rank
// decodes its own sequences, whose MoE rows cross to the experts' ranks and back at every
// step, and its cached logits must equal the one-rank full forward with every expert.
int check_expert_parallel(const TransformerConfig& c, Communicator& ep) {
  TransformerConfig split = c;
  split.ep = ep.size();
  split.ep_rank = ep.rank();
  ModelContext ctx;
  ctx.ep = &ep;
  const std::string what = "EP rank " + std::to_string(ep.rank());
  return decode_against_full_forward(split, ctx, c, ModelContext{}, sequences(c, ep.rank()), what.c_str(),
                                     [](const Tensor&) { return 0; });
}

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  auto world = MpiCommunicator::world();
  int failures = check(test::tiny_gpt_config(), *world) + check(test::tiny_llama_config(), *world) +
                 check(test::tiny_moe_config(), *world) + check(test::tiny_mla_config(), *world) +
                 check_expert_parallel(test::tiny_moe_config(), *world) +
                 check_expert_parallel(test::tiny_mla_config(), *world);
  float any = static_cast<float>(failures);
  world->all_reduce(&any, 1, ReduceOp::max);
  if (world->rank() == 0) std::printf("%s\n", any == 0 ? "decoder TP2 and EP2: cached logits match the full forward" : "FAILED");
  return any == 0 ? 0 : 1;
}
