#include "exec/runtime/data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace twinsim::exec {

TokenBatch TokenSource::batch(std::int64_t first_index, int count, int seq_len) const {
  TokenBatch b;
  b.sequences = count;
  b.seq_len = seq_len;
  const auto n = static_cast<std::size_t>(count) * static_cast<std::size_t>(seq_len);
  b.input.resize(n);
  b.target.resize(n);
  for (int i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i) * static_cast<std::size_t>(seq_len);
    sequence(first_index + i, seq_len, b.input.data() + at, b.target.data() + at);
  }
  return b;
}

std::int64_t first_sequence_of_micro_batch(std::int64_t step, int global_batch, int dp, int dp_rank,
                                           int micro, int micro_batch) {
  if (dp < 1 || global_batch % dp != 0)
    throw std::invalid_argument("global batch " + std::to_string(global_batch) +
                                " is not a multiple of dp = " + std::to_string(dp));
  return step * global_batch + static_cast<std::int64_t>(dp_rank) * (global_batch / dp) +
         static_cast<std::int64_t>(micro) * micro_batch;
}

std::uint64_t splitmix64(std::uint64_t x) {
  // Vigna, splitmix64.c: state += golden gamma, then the variant-13 finaliser of MurmurHash3
  std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

std::int32_t uniform_token(std::uint64_t random, int vocab) {
  // multiply-shift maps 64 random bits to [0, vocab) (Lemire 2019, "Fast random integer
  // generation in an interval"; the bias is below vocab / 2^64)
  return static_cast<std::int32_t>((static_cast<unsigned __int128>(random) * static_cast<unsigned>(vocab)) >> 64);
}

}  // namespace

SyntheticTokens::SyntheticTokens(std::uint64_t seed, int vocab, double pattern)
    : seed_(seed), vocab_(vocab) {
  if (vocab < 2) throw std::invalid_argument("vocab " + std::to_string(vocab) + ": must be >= 2");
  if (!(pattern >= 0.0 && pattern < 1.0))
    throw std::invalid_argument("pattern " + std::to_string(pattern) + ": must lie in [0, 1)");
  pattern_threshold_ = static_cast<std::uint64_t>(pattern * 18446744073709551616.0);  // * 2^64
}

void SyntheticTokens::sequence(std::int64_t index, int seq_len, std::int32_t* input,
                               std::int32_t* target) const {
  // one stream per sequence, keyed by (seed, index); token t draws from counter t
  const std::uint64_t stream = splitmix64(seed_ ^ splitmix64(static_cast<std::uint64_t>(index)));
  const std::uint64_t map_key = splitmix64(seed_ + 0x5851f42d4c957f2dULL);
  std::int32_t token = uniform_token(splitmix64(stream), vocab_);
  for (int t = 0; t <= seq_len; ++t) {
    if (t < seq_len) input[t] = token;
    if (t > 0) target[t - 1] = token;
    const std::uint64_t coin = splitmix64(stream + 2 * static_cast<std::uint64_t>(t) + 1);
    const std::uint64_t fresh = splitmix64(stream + 2 * static_cast<std::uint64_t>(t) + 2);
    // the learnable part: a fixed random successor of each token, the same for all sequences
    token = coin < pattern_threshold_
                ? uniform_token(splitmix64(map_key ^ static_cast<std::uint64_t>(token)), vocab_)
                : uniform_token(fresh, vocab_);
  }
}

namespace {

std::vector<std::int32_t> read_tokens(const std::string& path, int vocab, TextFileTokens::Format format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("token file '" + path + "': cannot open");
  std::vector<std::int32_t> tokens;
  if (format == TextFileTokens::Format::bytes) {
    std::ostringstream all;
    all << in.rdbuf();
    for (unsigned char c : all.str()) tokens.push_back(static_cast<std::int32_t>(c % vocab));
    return tokens;
  }
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || id < 0 || id >= vocab)
      throw std::runtime_error("token file '" + path + "': token " + std::to_string(tokens.size()) +
                               " is '" + word + "', not an integer id in [0, " + std::to_string(vocab) + ")");
    tokens.push_back(static_cast<std::int32_t>(id));
  }
  return tokens;
}

}  // namespace

TextFileTokens::TextFileTokens(const std::string& path, int vocab, Format format) : vocab_(vocab) {
  if (vocab < 2) throw std::invalid_argument("vocab " + std::to_string(vocab) + ": must be >= 2");
  tokens_ = read_tokens(path, vocab, format);
  if (tokens_.size() < 2)
    throw std::runtime_error("token file '" + path + "': holds " + std::to_string(tokens_.size()) +
                             " tokens, needs at least 2 for one (input, target) pair");
}

void TextFileTokens::sequence(std::int64_t index, int seq_len, std::int32_t* input,
                              std::int32_t* target) const {
  const auto n = static_cast<std::uint64_t>(tokens_.size());
  const std::uint64_t start = (static_cast<std::uint64_t>(index) * static_cast<std::uint64_t>(seq_len)) % n;
  for (int t = 0; t < seq_len; ++t) {
    input[t] = tokens_[(start + static_cast<std::uint64_t>(t)) % n];
    target[t] = tokens_[(start + static_cast<std::uint64_t>(t) + 1) % n];
  }
}

std::unique_ptr<TokenSource> training_tokens(const TokenFile& file, int vocab, std::uint64_t seed) {
  if (file.path.empty()) return std::make_unique<SyntheticTokens>(seed, vocab);
  return std::make_unique<BinaryTokenFile>(file.path, file.token_bytes, vocab);
}

BinaryTokenFile::BinaryTokenFile(const std::string& path, int token_bytes, int vocab)
    : path_(path), token_bytes_(token_bytes), vocab_(vocab) {
  if (token_bytes != 2 && token_bytes != 4) throw std::invalid_argument("token file: tokens are 2 or 4 bytes");
  if (vocab < 2) throw std::invalid_argument("vocab " + std::to_string(vocab) + ": must be >= 2");
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("token file '" + path + "': cannot be opened: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::runtime_error("token file '" + path + "': is not a regular file");
  }
  if (st.st_size % token_bytes != 0 || st.st_size / token_bytes < 2) {
    ::close(fd_);
    throw std::runtime_error("token file '" + path + "': " + std::to_string(st.st_size) + " bytes are not 2 or more whole " +
                             std::to_string(token_bytes) + "-byte tokens");
  }
  tokens_ = st.st_size / token_bytes;
}

BinaryTokenFile::~BinaryTokenFile() {
  if (fd_ >= 0) ::close(fd_);
}

// Tokens [first, first + count) of the file, wrapping past its end: one read per piece.
void BinaryTokenFile::read_tokens(std::uint64_t first, std::uint64_t count, std::int32_t* out) const {
  const auto n = static_cast<std::uint64_t>(tokens_);
  std::vector<unsigned char> bytes;
  while (count > 0) {
    const std::uint64_t at = first % n, piece = std::min(count, n - at);
    bytes.resize(piece * static_cast<std::uint64_t>(token_bytes_));
    const auto offset = static_cast<off_t>(at * static_cast<std::uint64_t>(token_bytes_));
    if (::pread(fd_, bytes.data(), bytes.size(), offset) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("token file '" + path_ + "': cannot read tokens from " + std::to_string(at));
    for (std::uint64_t i = 0; i < piece; ++i) {
      const unsigned char* b = bytes.data() + i * static_cast<std::uint64_t>(token_bytes_);
      std::uint32_t id = static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8;  // little-endian
      if (token_bytes_ == 4) id |= static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
      if (id >= static_cast<std::uint32_t>(vocab_))
        throw std::runtime_error("token file '" + path_ + "': token " + std::to_string(at + i) + " is " +
                                 std::to_string(id) + ", not below the model's vocab " + std::to_string(vocab_));
      *out++ = static_cast<std::int32_t>(id);
    }
    first += piece;
    count -= piece;
  }
}

void BinaryTokenFile::sequence(std::int64_t index, int seq_len, std::int32_t* input, std::int32_t* target) const {
  const auto n = static_cast<std::uint64_t>(tokens_);
  const std::uint64_t start = (static_cast<std::uint64_t>(index) * static_cast<std::uint64_t>(seq_len)) % n;
  std::vector<std::int32_t> span(static_cast<std::size_t>(seq_len) + 1);
  read_tokens(start, span.size(), span.data());
  std::copy(span.begin(), span.end() - 1, input);
  std::copy(span.begin() + 1, span.end(), target);
}

}  // namespace twinsim::exec
