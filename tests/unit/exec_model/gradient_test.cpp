// The single-rank model's analytic gradients against central finite differences of its
// own loss: a check independent of every backward formula.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "exec/model/transformer.hpp"
#include "exec/runtime/backend.hpp"
#include "tiny_models.hpp"

namespace twinsim::exec {
namespace {

MicroBatchState random_batch(const TransformerConfig& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> tok(0, static_cast<int>(c.model.vocab) - 1);
  MicroBatchState st;
  for (int i = 0; i < c.tokens(); ++i) st.tokens.push_back(tok(rng));
  for (int i = 0; i < c.tokens(); ++i) st.targets.push_back(tok(rng));
  return st;
}

// One value of a device array, read and written through the backend as a kernel would (the
// strict-device backend refuses the host's own reads and writes of device memory).
float value_at(const float* at) {
  float v = 0;
  current_backend().copy_to_host(&v, at, sizeof v);
  return v;
}
void set_value(float* at, float v) { current_backend().copy_to_device(at, &v, sizeof v); }

double loss_at(TransformerStage& stage, const MicroBatchState& batch) {
  MicroBatchState st;
  st.tokens = batch.tokens;
  st.targets = batch.targets;
  stage.forward(ModelContext{}, Tensor(), st);
  return st.loss;
}

void check_gradients(TransformerConfig c, float eps = 1e-2f) {
  TransformerStage stage(c);
  stage.initialize();
  const MicroBatchState batch = random_batch(c, 7);
  MicroBatchState st;
  st.tokens = batch.tokens;
  st.targets = batch.targets;
  stage.forward(ModelContext{}, Tensor(), st);
  stage.backward(ModelContext{}, Tensor(), 1.0f, st);

  // central difference (f(w+e) - f(w-e)) / 2e on a handful of entries of every parameter
  int checked = 0;
  for (ParamBlock* block : stage.blocks()) {
    for (std::size_t s = 0; s < block->slots().size(); ++s) {
      const ParamSlot& slot = block->slots()[s];
      for (std::size_t j = 0; j < slot.count; j += std::max<std::size_t>(1, slot.count / 5)) {
        float* w = block->param(static_cast<int>(s)) + j;
        const float saved = value_at(w);
        set_value(w, saved + eps);
        const double up = loss_at(stage, batch);
        set_value(w, saved - eps);
        const double down = loss_at(stage, batch);
        set_value(w, saved);
        const double numeric = (up - down) / (2.0 * eps);
        const double analytic = value_at(block->grad(static_cast<int>(s)) + j);
        EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << slot.spec.name << "[" << j << "]";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(ExecModelGradient, GptMatchesFiniteDifferences) { check_gradients(test::tiny_gpt_config()); }

TEST(ExecModelGradient, LlamaMatchesFiniteDifferences) { check_gradients(test::tiny_llama_config()); }

// The router's grad flows through the top_k probabilities that weight the experts; a
// finite step small enough not to change which experts a token picks sees the same.
TEST(ExecModelGradient, MoeMatchesFiniteDifferences) { check_gradients(test::tiny_moe_config(), 1e-3f); }

TEST(ExecModelGradient, MoeWithGeluExpertsAndNoSharedMatchesFiniteDifferences) {
  TransformerConfig c = test::tiny_moe_config();
  c.model.activation = Activation::gelu;
  c.model.moe->shared_experts = 0;
  check_gradients(c, 1e-3f);
}

// Latent attention: the latents' norms, the shared RoPE key (its grad summed over the
// heads) and V narrower than Q/K, with flash and plain attention, with and without Q's
// bottleneck (the routing of the MoE above is held by the small step).
TEST(ExecModelGradient, MlaMatchesFiniteDifferences) {
  check_gradients(test::tiny_mla_config(), 1e-3f);
  TransformerConfig plain = test::tiny_mla_config(false);
  plain.flash_attention = false;
  check_gradients(plain, 1e-3f);
}

TEST(ExecModelGradient, PlainAttentionMatchesFiniteDifferences) {
  TransformerConfig c = test::tiny_llama_config();
  c.flash_attention = false;
  check_gradients(c);
}

// Recompute changes what is kept, never the numbers: grads are bit-identical.
TEST(ExecModelGradient, RecomputeGivesIdenticalGradients) {
  auto grads_with = [](Recompute r) {
    TransformerConfig c = test::tiny_gpt_config();
    c.recompute = r;
    TransformerStage stage(c);
    stage.initialize();
    MicroBatchState st = random_batch(c, 3);
    stage.forward(ModelContext{}, Tensor(), st);
    stage.backward(ModelContext{}, Tensor(), 1.0f, st);
    std::vector<float> all;
    for (ParamBlock* b : stage.blocks()) {
      all.resize(all.size() + b->grads.size());
      current_backend().copy_to_host(all.data() + all.size() - b->grads.size(), b->grads.data(), b->grads.bytes());
    }
    return all;
  };
  const std::vector<float> none = grads_with(Recompute::none);
  EXPECT_EQ(none, grads_with(Recompute::selective));
  EXPECT_EQ(none, grads_with(Recompute::full));
}

}  // namespace
}  // namespace twinsim::exec
