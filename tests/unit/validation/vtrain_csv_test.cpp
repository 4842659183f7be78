// Reading the vTrain table and turning a row into the scenario vTrain's setup describes.
#include <gtest/gtest.h>

#include "scenario/build.hpp"
#include "scenario/load.hpp"

#include "sim/validate/csv_validation.hpp"
#include "sim/validate/vtrain_csv.hpp"

namespace twinsim {
namespace {

const char* const kHeader =
    "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
    "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n";

TEST(VtrainCsv, ReadsRowsInFileOrder) {
  const std::string text = std::string(kHeader) +
                           "2,16,8,1024,16,24,1024,1,1,2,372.160408\n"
                           "8,32,4,1024,16,24,1024,2,2,2,219.732754\r\n";
  const auto rows = parse_vtrain_csv(text, "t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].index, 0);
  EXPECT_EQ(rows[1].index, 1);
  EXPECT_EQ(rows[1].tp, 2);
  EXPECT_EQ(rows[1].dp, 2);
  EXPECT_EQ(rows[1].pp, 2);
  EXPECT_EQ(rows[0].micro_batch, 8);
  EXPECT_NEAR(rows[0].measured_s, 0.372160408, 1e-12);
  EXPECT_EQ(select_half(rows, "even").size(), 1u);
  EXPECT_EQ(select_half(rows, "odd").front().index, 1);
  EXPECT_THROW(select_half(rows, "third"), std::invalid_argument);
}

TEST(VtrainCsv, RejectsMalformedLinesNamingTheLine) {
  auto message = [](const std::string& body) {
    try {
      parse_vtrain_csv(std::string(kHeader) + body, "t.csv");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("2,16,8,1024,16,24,1024,1,1,2\n"), "t.csv:2: 10 columns, expected 11");
  EXPECT_EQ(message("2,16,8,1024,16,24,1024,1,1,2,fast\n"),
            "t.csv:2: column 'iteration time (ms)' = 'fast' is not a positive number");
  EXPECT_EQ(message("2,16,8.5,1024,16,24,1024,1,1,2,3\n"), "t.csv:2: column 'micro batch' = '8.5' is not an integer");
  EXPECT_EQ(message("2,16,8,1024,16,24,99999999999999999999,1,1,2,3\n"),
            "t.csv:2: column 'sequence length' = '99999999999999999999' is too large (at most 2147483647)");
  EXPECT_EQ(message("2,16,8,1024abc,16,24,1024,1,1,2,3\n"),
            "t.csv:2: column 'hidden size' = '1024abc' is not a positive number");
  EXPECT_EQ(message("4,16,8,1024,16,24,1024,1,1,2,3\n"),
            "t.csv:2: tensor x data x pipeline parallelism = 2 is not GPUs = 4");
  EXPECT_EQ(message(""), "t.csv: no data rows");
}

// Megatron's _vocab_size_with_padding: 50,257 GPT-2 tokens to a multiple of 128 x tp.
TEST(VtrainCsv, PadsTheVocabularyAsMegatronDoes) {
  EXPECT_EQ(megatron_padded_vocab(50257, 1), 50304);  // 393 x 128
  EXPECT_EQ(megatron_padded_vocab(50257, 2), 50432);  // 197 x 256
  EXPECT_EQ(megatron_padded_vocab(50257, 4), 50688);  //  99 x 512
  EXPECT_EQ(megatron_padded_vocab(50257, 8), 51200);  //  50 x 1024, Narayanan's 51,200
}

TEST(VtrainCsv, RowBecomesTheDescribedScenario) {
  const auto rows = parse_vtrain_csv(std::string(kHeader) + "8,32,4,2048,16,20,1024,2,2,2,219.7\n", "t.csv");
  const Scenario s = vtrain_scenario(
      rows[0], cluster_from_text("{preset: dgx-a100-80gb, intra_node: {bandwidth_GBps: 150, latency_us: 3}}", "--cluster"),
      catalog_stack("megatron-eager"));
  EXPECT_EQ(s.model.hidden, 2048);
  EXPECT_EQ(s.model.ffn_hidden, 4 * 2048);
  EXPECT_EQ(s.model.layers, 20);
  EXPECT_EQ(s.model.vocab, 50432);
  EXPECT_EQ(s.plan.tp * s.plan.dp * s.plan.pp, 8);
  EXPECT_EQ(s.plan.recompute, Recompute::full);
  EXPECT_EQ(s.plan.schedule, Schedule::one_f_one_b);
  EXPECT_FALSE(s.plan.overlap_grad_reduce);
  EXPECT_EQ(s.training->precision, Dtype::fp16);
  EXPECT_EQ(s.training->micro_batches(s.plan.dp), 4);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.bandwidth_Bps, 150e9);
}

}  // namespace
}  // namespace twinsim
