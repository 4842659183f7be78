// Deterministic data: published splitmix64 outputs, plan independence, text files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "exec/runtime/data.hpp"

namespace twinsim::exec {
namespace {

TEST(SplitMix64, VignasReferenceOutputsFromSeedZero) {
  // splitmix64.c seeded with x = 0: next() returns mix(x += 0x9e3779b97f4a7c15)
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
}

TEST(SyntheticTokens, TargetIsInputShiftedByOne) {
  const SyntheticTokens src(7, 50);
  const TokenBatch b = src.batch(0, 1, 64);
  for (int t = 0; t + 1 < 64; ++t) EXPECT_EQ(b.target[t], b.input[t + 1]);
  for (int t = 0; t < 64; ++t) {
    EXPECT_GE(b.input[t], 0);
    EXPECT_LT(b.input[t], 50);
  }
  // a longer read of the same sequence starts with the same tokens
  const TokenBatch longer = src.batch(0, 1, 65);
  EXPECT_EQ(b.target[63], longer.input[64]);
}

TEST(SyntheticTokens, SequenceDependsOnlyOnSeedAndIndex) {
  const SyntheticTokens a(1234, 1000), same(1234, 1000), other_seed(1235, 1000);
  const TokenBatch whole = a.batch(10, 6, 32);  // sequences 10..15
  const TokenBatch piece = same.batch(13, 2, 32);  // sequences 13, 14 on their own
  EXPECT_TRUE(std::equal(piece.input.begin(), piece.input.end(), whole.input.begin() + 3 * 32));
  EXPECT_TRUE(std::equal(piece.target.begin(), piece.target.end(), whole.target.begin() + 3 * 32));
  EXPECT_NE(other_seed.batch(10, 6, 32).input, whole.input);
  EXPECT_FALSE(std::equal(whole.input.begin(), whole.input.begin() + 32, whole.input.begin() + 32));
}

// The tokens of one step, read micro-batch by micro-batch as a plan with `dp` ranks would.
std::vector<std::int32_t> step_tokens(const TokenSource& src, int step, int global_batch, int dp, int micro_batch) {
  std::vector<std::int32_t> all;
  const int micros = global_batch / dp / micro_batch;
  for (int r = 0; r < dp; ++r)
    for (int m = 0; m < micros; ++m) {
      const auto first = first_sequence_of_micro_batch(step, global_batch, dp, r, m, micro_batch);
      const TokenBatch b = src.batch(first, micro_batch, 16);
      all.insert(all.end(), b.input.begin(), b.input.end());
    }
  return all;
}

TEST(SyntheticTokens, AStepHoldsTheSameTokensWhateverThePlan) {
  const SyntheticTokens src(99, 512);
  const auto reference = step_tokens(src, 3, 8, 1, 1);
  EXPECT_EQ(step_tokens(src, 3, 8, 1, 4), reference);
  EXPECT_EQ(step_tokens(src, 3, 8, 2, 1), reference);
  EXPECT_EQ(step_tokens(src, 3, 8, 4, 2), reference);
  EXPECT_EQ(step_tokens(src, 3, 8, 8, 1), reference);
  EXPECT_NE(step_tokens(src, 4, 8, 1, 1), reference);
  EXPECT_EQ(first_sequence_of_micro_batch(2, 8, 2, 1, 1, 2), 2 * 8 + 4 + 2);
  EXPECT_THROW(first_sequence_of_micro_batch(0, 6, 4, 0, 0, 1), std::invalid_argument);
}

// Share of transitions a -> b that go to a's most frequent successor, averaged over a.
double top_successor_share(const SyntheticTokens& src, int vocab) {
  std::map<int, std::map<int, int>> next;
  const TokenBatch b = src.batch(0, 200, 100);
  for (std::size_t i = 0; i < b.input.size(); ++i) next[b.input[i]][b.target[i]]++;
  double share = 0;
  for (const auto& [a, counts] : next) {
    int total = 0, top = 0;
    for (const auto& [t, c] : counts) {
      total += c;
      top = std::max(top, c);
    }
    share += static_cast<double>(top) / total;
  }
  return share / vocab;
}

TEST(SyntheticTokens, PatternMakesTheNextTokenPredictable) {
  // with probability p the successor is fixed, else uniform: top share ~ p + (1 - p) / V
  EXPECT_GT(top_successor_share(SyntheticTokens(5, 16, 0.5), 16), 0.45);
  EXPECT_LT(top_successor_share(SyntheticTokens(5, 16, 0.0), 16), 0.15);
  EXPECT_THROW(SyntheticTokens(5, 1), std::invalid_argument);
  EXPECT_THROW(SyntheticTokens(5, 16, 1.0), std::invalid_argument);
}

class TextFileTest : public testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("twinsim_tokens_" + std::to_string(::getpid()) + ".txt")).string();
    std::ofstream(path_, std::ios::binary) << text;
    return path_;
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string path_;
};

TEST_F(TextFileTest, BytesTileTheFileAndWrap) {
  const TextFileTokens src(write("hello world"), 256, TextFileTokens::Format::bytes);
  EXPECT_EQ(src.tokens().size(), 11u);
  std::int32_t in[4], tg[4];
  src.sequence(0, 4, in, tg);
  EXPECT_EQ(std::string(in, in + 4), "hell");
  EXPECT_EQ(std::string(tg, tg + 4), "ello");
  src.sequence(1, 4, in, tg);
  EXPECT_EQ(std::string(in, in + 4), "o wo");
  src.sequence(2, 4, in, tg);  // positions 8..11: "rld" then back to "h"
  EXPECT_EQ(std::string(in, in + 4), "rld" "h");
  EXPECT_EQ(std::string(tg, tg + 4), "ld" "he");
}

TEST_F(TextFileTest, BytesAreTakenModuloTheVocabulary) {
  const TextFileTokens src(write("hA"), 100, TextFileTokens::Format::bytes);
  EXPECT_EQ(src.tokens(), (std::vector<std::int32_t>{'h' % 100, 'A'}));  // 104 -> 4, 65
}

TEST_F(TextFileTest, WhitespaceSeparatedIds) {
  const TextFileTokens src(write("5 3\n9\t1 \n"), 10, TextFileTokens::Format::ids);
  EXPECT_EQ(src.tokens(), (std::vector<std::int32_t>{5, 3, 9, 1}));
  std::int32_t in[2], tg[2];
  src.sequence(1, 2, in, tg);
  EXPECT_EQ(in[0], 9);
  EXPECT_EQ(tg[1], 5);  // wraps to the first token
}

TEST_F(TextFileTest, BadFilesNameTheProblem) {
  for (const char* text : {"1 2 x3", "1 10", "-1 2", "7"}) {
    try {
      TextFileTokens(write(text), 10, TextFileTokens::Format::ids);
      FAIL() << "accepted '" << text << "'";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("token file"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(TextFileTokens("/nonexistent/tokens.txt", 10, TextFileTokens::Format::bytes), std::runtime_error);
}

// A nanoGPT-style .bin of the ids written by hand, little-endian.
std::string write_bin(const std::vector<std::uint32_t>& ids, int bytes, const std::string& tag) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("twinsim_tokens_" + std::to_string(::getpid()) + tag + ".bin")).string();
  std::ofstream out(path, std::ios::binary);
  for (std::uint32_t id : ids)
    for (int b = 0; b < bytes; ++b) out.put(static_cast<char>((id >> (8 * b)) & 0xff));
  return path;
}

TEST(BinaryTokenFile, ReadsWhatTheTextReaderReads) {
  // the same 7 ids as a uint16 .bin, a uint32 .bin and whitespace-separated text: every
  // sequence, wrapping ones included, agrees with the independent text reader
  const std::vector<std::uint32_t> ids{5, 300, 9, 1, 65535, 0, 42};
  const std::string u16 = write_bin(ids, 2, "a"), u32 = write_bin(ids, 4, "b");
  const std::string txt = (std::filesystem::temp_directory_path() / ("twinsim_ids_" + std::to_string(::getpid()) + ".txt")).string();
  std::ofstream(txt) << "5 300 9 1 65535 0 42";
  const BinaryTokenFile a(u16, 2, 70000), b(u32, 4, 70000);
  const TextFileTokens t(txt, 70000, TextFileTokens::Format::ids);
  EXPECT_EQ(a.tokens(), 7);
  for (std::int64_t index = 0; index < 6; ++index) {
    std::int32_t in_a[3], tg_a[3], in_b[3], tg_b[3], in_t[3], tg_t[3];
    a.sequence(index, 3, in_a, tg_a);
    b.sequence(index, 3, in_b, tg_b);
    t.sequence(index, 3, in_t, tg_t);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(in_a[i], in_t[i]);
      EXPECT_EQ(tg_a[i], tg_t[i]);
      EXPECT_EQ(in_b[i], in_t[i]);
      EXPECT_EQ(tg_b[i], tg_t[i]);
    }
  }
  std::int32_t in[3], tg[3];
  a.sequence(2, 3, in, tg);  // positions 6, 7 = 0, 8 = 1: 42, 5, 300 -> targets 5, 300, 9
  EXPECT_EQ(in[0], 42);
  EXPECT_EQ(tg[2], 9);
  for (const std::string& f : {u16, u32, txt}) std::filesystem::remove(f);
}

TEST(BinaryTokenFile, BadFilesNameTheFileAndTheProblem) {
  const std::string odd = write_bin({1, 2, 3}, 2, "c");
  std::filesystem::resize_file(odd, 5);  // two and a half uint16 tokens
  const std::string big = write_bin({1, 2, 3000}, 2, "d");
  auto message = [](auto&& make) {
    try {
      make();
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message([&] { BinaryTokenFile f(odd, 2, 100); }).find("not 2 or more whole"), std::string::npos);
  EXPECT_NE(message([&] { BinaryTokenFile f("/nonexistent/t.bin", 2, 100); }).find("cannot be opened"), std::string::npos);
  const BinaryTokenFile f(big, 2, 100);  // the id past the vocabulary shows when read
  std::int32_t in[2], tg[2];
  EXPECT_NE(message([&] { f.sequence(0, 2, in, tg); }).find("token 2 is 3000"), std::string::npos);
  std::filesystem::remove(odd);
  std::filesystem::remove(big);
}

TEST(BinaryTokenFile, TrainingTokensPicksTheFileOrTheSyntheticSource) {
  const std::string path = write_bin({1, 2, 3, 4}, 4, "e");
  EXPECT_NE(dynamic_cast<BinaryTokenFile*>(training_tokens({path, 4}, 16, 7).get()), nullptr);
  EXPECT_NE(dynamic_cast<SyntheticTokens*>(training_tokens({}, 16, 7).get()), nullptr);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace twinsim::exec
