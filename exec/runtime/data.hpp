#pragma once
// Deterministic training data. A source hands out sequences by their global index, so
// that the tokens of a sequence never depend on the plan: with G sequences per step,
// sequence j of step k is index k * G + j on 1 rank and on 8. Each sequence comes as
// (input, target) with target[t] = input[t + 1], the next-token pairs of LM training.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/workload.hpp"

namespace twinsim::exec {

struct TokenBatch {
  int sequences = 0;
  int seq_len = 0;
  std::vector<std::int32_t> input;   // sequences * seq_len, sequence-major
  std::vector<std::int32_t> target;  // input shifted by one token
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual int vocab() const = 0;
  // seq_len + 1 consecutive tokens of sequence `index` go to input (first seq_len) and
  // target (last seq_len); both hold seq_len entries.
  virtual void sequence(std::int64_t index, int seq_len, std::int32_t* input,
                        std::int32_t* target) const = 0;

  // `count` sequences from `first_index` on.
  TokenBatch batch(std::int64_t first_index, int count, int seq_len) const;
};

// Which global sequences a data-parallel rank's micro-batch holds, Megatron's split: the
// global batch of a step is cut into dp contiguous shares, each into micro-batches.
//   first = step * global_batch + dp_rank * (global_batch / dp) + micro * micro_batch
std::int64_t first_sequence_of_micro_batch(std::int64_t step, int global_batch, int dp,
                                           int dp_rank, int micro, int micro_batch);

// splitmix64 (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators";
// constants of Vigna's reference C code): a counter-based stream, so any token can be
// computed directly from (seed, sequence, position) in any order.
std::uint64_t splitmix64(std::uint64_t x);

// Seeded synthetic tokens with something to learn: each token repeats a fixed random map
// of the previous one with probability `pattern` and is uniform otherwise, so the loss of
// a working model falls below log(vocab).
class SyntheticTokens final : public TokenSource {
 public:
  SyntheticTokens(std::uint64_t seed, int vocab, double pattern = 0.5);
  int vocab() const override { return vocab_; }
  void sequence(std::int64_t index, int seq_len, std::int32_t* input,
                std::int32_t* target) const override;

 private:
  std::uint64_t seed_;
  int vocab_;
  std::uint64_t pattern_threshold_;  // pattern * 2^64
};

// A tokenised text file read whole: either bytes (token = byte mod vocab) or
// whitespace-separated integer ids (each must lie in [0, vocab)). Sequence i is the
// seq_len + 1 tokens from position (i * seq_len) mod n on, reading past the end wraps
// to the start: consecutive sequences tile the file, epoch after epoch.
class TextFileTokens final : public TokenSource {
 public:
  enum class Format { bytes, ids };
  // Throws std::runtime_error naming the file when it cannot be read, an id is not an
  // integer in range, or it holds fewer than 2 tokens.
  TextFileTokens(const std::string& path, int vocab, Format format);
  int vocab() const override { return vocab_; }
  void sequence(std::int64_t index, int seq_len, std::int32_t* input,
                std::int32_t* target) const override;
  const std::vector<std::int32_t>& tokens() const { return tokens_; }

 private:
  int vocab_;
  std::vector<std::int32_t> tokens_;
};

// A flat binary file of token ids, nanoGPT's / Megatron's .bin (little-endian uint16 or
// uint32, no header), read where a sequence lies (pread: nothing loaded whole, safe from
// any thread). Sequence i is the seq_len + 1 tokens from position (i * seq_len) mod n on,
// wrapping past the end, as TextFileTokens. Throws std::runtime_error naming the file when
// it cannot be opened, its size is not whole tokens or under 2 tokens, or (on reading) a
// token id is not below vocab.
class BinaryTokenFile final : public TokenSource {
 public:
  BinaryTokenFile(const std::string& path, int token_bytes, int vocab);
  ~BinaryTokenFile() override;
  BinaryTokenFile(const BinaryTokenFile&) = delete;
  BinaryTokenFile& operator=(const BinaryTokenFile&) = delete;
  int vocab() const override { return vocab_; }
  void sequence(std::int64_t index, int seq_len, std::int32_t* input,
                std::int32_t* target) const override;
  std::int64_t tokens() const { return tokens_; }

 private:
  void read_tokens(std::uint64_t first, std::uint64_t count, std::int32_t* out) const;
  std::string path_;
  int fd_ = -1;
  int token_bytes_;
  int vocab_;
  std::int64_t tokens_ = 0;
};

// The tokens a training run reads: the scenario's token file (training.data), else the
// seeded synthetic ones.
std::unique_ptr<TokenSource> training_tokens(const TokenFile& file, int vocab, std::uint64_t seed);

}  // namespace twinsim::exec
