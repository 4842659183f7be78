// safetensors checkpoints: round trips, the byte layout of the format, corruption, atomicity.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/cpu/tracked_allocator.hpp"
#include "exec/runtime/checkpoint.hpp"

namespace twinsim::exec {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("twinsim_ckpt_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<char> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TensorFile sample() {
  TensorFile f;
  const float w[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::uint16_t h[3] = {0x3f80, 0xc000, 0x7f80};  // bf16 1.0, -2.0, +inf
  f.add_f32("layer0.attn.qkv.weight", {2, 3}, w);
  f.add_u16("layer0.attn.qkv.weight.bf16", Dtype::bf16, {3}, h);
  f.add_u16("head.fp16", Dtype::fp16, {1, 1}, h);
  f.add_f32("empty", {0, 4}, nullptr);
  f.metadata()["step"] = "42";
  return f;
}

TEST(Fnv1a64, PublishedTestVectors) {
  // FNV test vectors (Fowler/Noll/Vo reference code, test_fnv.c, FNV-1a 64-bit)
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
  // continuing a hash equals hashing the concatenation
  EXPECT_EQ(fnv1a64("bar", 3, fnv1a64("foo", 3)), fnv1a64("foobar", 6));
}

TEST_F(CheckpointTest, RoundTripKeepsEveryBitAndTheMetadata) {
  save_safetensors(path("a.safetensors"), sample());
  const TensorFile back = load_safetensors(path("a.safetensors"));
  EXPECT_EQ(back.f32("layer0.attn.qkv.weight"), (std::vector<float>{1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -7.0f}));
  EXPECT_EQ(back.u16("layer0.attn.qkv.weight.bf16"), (std::vector<std::uint16_t>{0x3f80, 0xc000, 0x7f80}));
  EXPECT_EQ(back.at("head.fp16").dtype, Dtype::fp16);
  EXPECT_EQ(back.at("layer0.attn.qkv.weight").shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(back.at("empty").shape, (std::vector<std::int64_t>{0, 4}));
  EXPECT_TRUE(back.f32("empty").empty());
  EXPECT_EQ(back.metadata().at("step"), "42");
  EXPECT_EQ(back.metadata().count(kChecksumKey), 0u);
  EXPECT_THROW(back.f32("layer0.attn.qkv.weight.bf16"), CheckpointError);
  EXPECT_THROW(back.at("missing"), CheckpointError);
}

TEST_F(CheckpointTest, FileFollowsTheSafetensorsLayout) {
  TensorFile f;
  const float v[2] = {1.0f, -2.0f};
  f.add_f32("b", {2}, v);
  f.add_f32("a", {1}, v);
  save_safetensors(path("l.safetensors"), f);
  const std::vector<char> bytes = read_bytes(path("l.safetensors"));

  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);  // little-endian
  EXPECT_EQ((8 + n) % 8, 0u);  // data starts 8-byte aligned
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  const auto header = nlohmann::json::parse(std::string(bytes.data() + 8, n));
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json::array({1}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({0, 4}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({4, 12}));
  EXPECT_TRUE(header["__metadata__"][kChecksumKey].is_string());
  // IEEE 754 1.0f = 0x3f800000, -2.0f = 0xc0000000, little-endian
  const unsigned char expected[12] = {0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0};
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, expected, 12), 0);
}

TEST_F(CheckpointTest, AFlippedDataByteIsReportedAsCorruption) {
  save_safetensors(path("c.safetensors"), sample());
  std::vector<char> bytes = read_bytes(path("c.safetensors"));
  bytes[bytes.size() - 3] ^= 0x10;
  write_bytes(path("c.safetensors"), bytes);
  try {
    load_safetensors(path("c.safetensors"));
    FAIL() << "a flipped bit must be detected";
  } catch (const CheckpointCorrupted& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

// A rank's file replaced by a folder once read as 2^63 bytes (std::bad_alloc); a FIFO
// would block: both are refused by name before reading.
TEST_F(CheckpointTest, ARankThatIsNotARegularFileIsRefusedByName) {
  const std::string folder = path("rank-0.safetensors");
  fs::create_directories(folder);
  const std::string fifo = path("rank-1.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {folder, fifo}) {
    try {
      load_safetensors(p);
      ADD_FAILURE() << p << " was read";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("checkpoint '" + p + "': is not a regular file"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CheckpointTest, MalformedFilesAreCheckpointErrors) {
  save_safetensors(path("m.safetensors"), sample());
  const std::vector<char> good = read_bytes(path("m.safetensors"));

  write_bytes(path("short"), std::vector<char>(good.begin(), good.begin() + 5));
  EXPECT_THROW(load_safetensors(path("short")), CheckpointError);

  std::vector<char> truncated(good.begin(), good.end() - 4);  // tensors past the end
  write_bytes(path("trunc"), truncated);
  EXPECT_THROW(load_safetensors(path("trunc")), CheckpointError);

  std::vector<char> long_header = good;
  long_header[6] = 1;  // header length about 2^48
  write_bytes(path("len"), long_header);
  EXPECT_THROW(load_safetensors(path("len")), CheckpointError);

  std::vector<char> bad_json = good;
  bad_json[8] = '[';
  bad_json[9] = '{';
  write_bytes(path("json"), bad_json);
  EXPECT_THROW(load_safetensors(path("json")), CheckpointError);

  EXPECT_THROW(load_safetensors(path("does_not_exist")), CheckpointError);
}

TEST_F(CheckpointTest, SaveReplacesAtomicallyAndLeavesNoTemporaryFile) {
  save_safetensors(path("r.safetensors"), sample());
  TensorFile second;
  const float x = 9.0f;
  second.add_f32("x", {1}, &x);
  save_safetensors(path("r.safetensors"), second);
  const TensorFile back = load_safetensors(path("r.safetensors"));
  EXPECT_EQ(back.tensors().size(), 1u);
  EXPECT_EQ(back.f32("x"), std::vector<float>{9.0f});
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "r.safetensors");
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(save_safetensors((dir_ / "no_such_dir" / "x.safetensors").string(), second), CheckpointError);
}

TEST_F(CheckpointTest, TypedBuffersRoundTripByName) {
  TrackedAllocator alloc;
  TypedBuffer w(alloc, {2, 2}, MemCategory::params, "w");
  TypedBuffer m(alloc, {3}, MemCategory::optimizer, "m", Dtype::bf16);
  for (int i = 0; i < 4; ++i) w.f32()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  m.u16()[2] = 0x4049;
  TensorFile f;
  f.add(w);
  f.add(m);
  save_safetensors(path("b.safetensors"), f);

  TypedBuffer w2(alloc, {2, 2}, MemCategory::params, "w");
  TypedBuffer m2(alloc, {3}, MemCategory::optimizer, "m", Dtype::bf16);
  const TensorFile back = load_safetensors(path("b.safetensors"));
  back.copy_to(w2);
  back.copy_to(m2);
  EXPECT_EQ(std::memcmp(w.raw(), w2.raw(), w.bytes()), 0);
  EXPECT_EQ(m2.u16()[2], 0x4049);
  TypedBuffer wrong_shape(alloc, {4}, MemCategory::params, "w");
  EXPECT_THROW(back.copy_to(wrong_shape), CheckpointError);
}

}  // namespace
}  // namespace twinsim::exec
