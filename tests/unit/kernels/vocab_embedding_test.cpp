// The executor's vocabulary-shard embedding (kernels/cpu/vocab_embedding.hpp): each token's
// row of the shard, zeros for the tokens of other shards, and the gradient added token by
// token, in storage type T with one rounding per add.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/vocab_embedding.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::cpu {
namespace {

using testing::random_vector;

// Two shards of a 10-row vocabulary, [0, 4) and [4, 10): each token is found in exactly one,
// so the two lookups sum to the whole table's.
TEST(VocabEmbedding, ShardsLookUpTheirOwnRowsAndZerosElsewhere) {
  const int dim = 3;
  const std::vector<int> tokens{7, 0, 4, 3, 9, 0};
  const auto table = random_vector(10 * dim, 1);
  std::vector<float> low(tokens.size() * dim, -1.0f), high(tokens.size() * dim, -1.0f);
  vocab_embedding_forward(tokens.data(), table.data(), low.data(), 6, dim, 0, 4);
  vocab_embedding_forward(tokens.data(), table.data() + 4 * dim, high.data(), 6, dim, 4, 6);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < dim; ++j) {
      const bool in_low = tokens[i] < 4;
      EXPECT_EQ(low[i * dim + j], in_low ? table[tokens[i] * dim + j] : 0.0f) << i << "," << j;
      EXPECT_EQ(high[i * dim + j], in_low ? 0.0f : table[tokens[i] * dim + j]) << i << "," << j;
    }
}

// A repeated token's rows add up in its row; rows of other shards and unused rows keep theirs.
TEST(VocabEmbedding, GradientAddsRepeatedTokensInOrder) {
  const int dim = 2;
  const std::vector<int> tokens{5, 6, 5, 1, 5};
  const std::vector<float> dout{1, 2, 10, 20, 100, 200, 7, 7, 1000, 2000};
  std::vector<float> dtable{0.5f, 0.5f, 0, 0, 3, 3, 0, 0};  // shard rows [4, 8)
  vocab_embedding_backward(tokens.data(), dout.data(), dtable.data(), 5, dim, 4, 4);
  EXPECT_EQ(dtable, (std::vector<float>{0.5f, 0.5f, 1101, 2202, 13, 23, 0, 0}));
}

// bf16: each add is rounded to 8 bits, as the model's 16-bit gradients are.
TEST(VocabEmbedding, Bf16GradientRoundsEachAdd) {
  const std::vector<int> tokens{0, 0};
  const std::vector<bf16> dout{to_bf16(1.0f), to_bf16(1.0f / 512)};
  std::vector<bf16> dtable{to_bf16(256.0f)};
  vocab_embedding_backward(tokens.data(), dout.data(), dtable.data(), 2, 1, 0, 1);
  // 256 + 1 = 257 rounds to 256 (bf16 has 8 bits: 256's neighbours are 254 and 258);
  // + 1/512 stays 256
  EXPECT_EQ(to_float(dtable[0]), 256.0f);
}

}  // namespace
}  // namespace twinsim::kernels::cpu
