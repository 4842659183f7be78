// KV-cache decoding against the training forward re-run on the growing sequence (an
// independent path: flash attention over the whole sequence, its own embedding and head).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "exec/model/decoder.hpp"
#include "tests/unit/exec_model/decoder_reference.hpp"
#include "tests/unit/exec_model/tiny_models.hpp"

namespace twinsim::exec {
namespace {

constexpr int kPrompt = 3, kTotal = 8;

std::vector<int> token_rows(int batch, int vocab) {
  std::vector<int> t;
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < kTotal; ++j) t.push_back((7 * b + 5 * j * j + 3) % vocab);
  return t;
}

// From the decoder's length, the prompt up to kPrompt tokens in one call, then one token at
// a time up to kTotal; at every length the cached logits must equal the full forward's over
// each sequence's tokens so far (`all`: [batch, kTotal]).
void expect_decoding_matches_full_forward(const TransformerConfig& c, const ModelContext& ctx, Decoder& decoder,
                                          const std::vector<int>& all) {
  std::vector<int> step;
  for (int len = kPrompt; len <= kTotal; ++len) {
    const int first = decoder.length();
    step.clear();
    for (int b = 0; b < c.micro_batch; ++b)
      for (int j = first; j < len; ++j) step.push_back(all[b * kTotal + j]);
    const Tensor logits = decoder.forward(ctx, step.data(), len - first);
    const std::vector<float> ref = test::full_forward_last_logits(c, ctx, all, kTotal, len);
    ASSERT_EQ(logits.size(), ref.size());
    float scale = 0;
    for (float v : ref) scale = std::max(scale, std::abs(v));
    // fp32, different summation orders (flash tiles vs one pass): 1e-5 of the largest logit
    EXPECT_LE(test::max_abs_diff(test::host_values(ctx, logits).data(), ref), 1e-5f * scale) << "length " << len;
  }
  EXPECT_EQ(decoder.length(), kTotal);
}

// Prefill kPrompt tokens, then decode one at a time up to kTotal. With `rewound`, a decode run
// again (issue 61: validate's decode rounds): rewound to the start after decoding to kTotal, the
// same tokens again must give the full forward's logits at every length (the stale positions
// past the prompt are overwritten, never read); rewinding past the cached length is refused.
void expect_decode_matches_full_forward(TransformerConfig c, bool rewound = false) {
  const ModelContext ctx{};
  const std::vector<int> all = token_rows(c.micro_batch, static_cast<int>(c.model.vocab));
  TransformerStage stage(c);
  stage.initialize();
  Decoder decoder(stage, c.micro_batch, kTotal);
  expect_decoding_matches_full_forward(c, ctx, decoder, all);
  // K and V of every layer for every position: 2 * layers * batch * len * kv_width * 4 B;
  // MLA: the latent and the RoPE key, layers * batch * len * (kv_lora + rope) * 4 B
  const std::int64_t per_position =
      c.model.mla ? c.model.mla->kv_lora_rank + c.model.mla->qk_rope_head_dim : 2 * c.model.kv_width();
  EXPECT_EQ(decoder.kv_cache_bytes(), c.model.layers * c.micro_batch * kTotal * per_position * 4);
  if (!rewound) return;
  EXPECT_THROW(decoder.rewind(kTotal + 1), std::invalid_argument);
  EXPECT_THROW(decoder.rewind(-1), std::invalid_argument);
  decoder.rewind(0);  // from the start: the helper prefills kPrompt tokens again
  EXPECT_EQ(decoder.length(), 0);
  expect_decoding_matches_full_forward(c, ctx, decoder, all);
}

TEST(Decoder, GptKvCacheMatchesFullForward) { expect_decode_matches_full_forward(test::tiny_gpt_config()); }
TEST(Decoder, LlamaGqaKvCacheMatchesFullForward) { expect_decode_matches_full_forward(test::tiny_llama_config()); }

TEST(Decoder, MoeKvCacheMatchesFullForward) { expect_decode_matches_full_forward(test::tiny_moe_config()); }

// The latent cache: the prefill rebuilds K and V per head, each decode step absorbs W_UK
// and W_UV (DeepSeek-V2 §2.1.2); the training forward rebuilds them every time.
TEST(Decoder, MlaLatentCacheMatchesFullForward) {
  expect_decode_matches_full_forward(test::tiny_mla_config());
  expect_decode_matches_full_forward(test::tiny_mla_config(false));
}

// Prefix caching: every sequence opens with the same kPrefix tokens, computed once by a
// one-sequence decoder and copied in; the rest of the prompt and the decode steps must give
// the full forward's logits (the training forward over each sequence's whole tokens).
void expect_prefix_cache_matches_full_forward(TransformerConfig c) {
  constexpr int kPrefix = 2;
  const ModelContext ctx{};
  std::vector<int> all = token_rows(c.micro_batch, static_cast<int>(c.model.vocab));
  for (int b = 1; b < c.micro_batch; ++b) std::copy_n(all.begin(), kPrefix, all.begin() + b * kTotal);
  TransformerStage stage(c);
  stage.initialize();
  Decoder prefix(stage, 1, kPrefix);
  prefix.forward(ctx, all.data(), kPrefix);
  Decoder decoder(stage, c.micro_batch, kTotal);
  decoder.start_from_prefix(prefix, kPrefix);
  EXPECT_EQ(decoder.length(), kPrefix);
  expect_decoding_matches_full_forward(c, ctx, decoder, all);
  // a cache that is not empty, or a prefix longer than the source holds, is refused
  EXPECT_THROW(decoder.start_from_prefix(prefix, kPrefix), std::invalid_argument);
  Decoder other(stage, c.micro_batch, kTotal);
  EXPECT_THROW(other.start_from_prefix(prefix, kPrefix + 1), std::invalid_argument);
}

TEST(Decoder, GptPrefixCacheMatchesFullForward) { expect_prefix_cache_matches_full_forward(test::tiny_gpt_config()); }
TEST(Decoder, LlamaPrefixCacheMatchesFullForward) {
  expect_prefix_cache_matches_full_forward(test::tiny_llama_config());
}
TEST(Decoder, MlaPrefixCacheMatchesFullForward) { expect_prefix_cache_matches_full_forward(test::tiny_mla_config()); }

TEST(Decoder, LlamaRewoundDecodeMatchesFullForward) {
  expect_decode_matches_full_forward(test::tiny_llama_config(), /*rewound=*/true);
}
TEST(Decoder, MlaRewoundDecodeMatchesFullForward) {
  expect_decode_matches_full_forward(test::tiny_mla_config(), /*rewound=*/true);
}

TEST(Decoder, GreedyPicksTheLowestOfTiedMaxima) {
  const float logits[] = {0.5f, 2.0f, 2.0f, -1.0f, /* second sequence */ 3.0f, 0.0f, 0.0f, 3.0f};
  EXPECT_EQ(greedy_tokens(ModelContext{}, logits, 2, 4, 0), (std::vector<int>{1, 0}));
}

TEST(Decoder, RefusesMoreTokensThanTheCache) {
  TransformerConfig c = test::tiny_gpt_config();
  TransformerStage stage(c);
  stage.initialize();
  Decoder decoder(stage, c.micro_batch, 2);
  const std::vector<int> three(3 * c.micro_batch, 1);
  EXPECT_THROW(decoder.forward(ModelContext{}, three.data(), 3), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim::exec
