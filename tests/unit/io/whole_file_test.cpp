// Files written whole or not at all (io/whole_file): the content lands only after every
// write and the close succeeded; a failure names the path and leaves no partial file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "io/whole_file.hpp"

namespace fs = std::filesystem;

namespace twinsim::io {
namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("twinsim_io_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool only_file_is(const fs::path& dir, const std::string& name) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++n;
    if (e.path().filename() != name) return false;
  }
  return n == 1;
}

TEST(WholeFile, WritesTheContentAndLeavesNoTemporary) {
  const fs::path dir = fresh_dir("ok");
  write_file_whole((dir / "out.json").string(), "{\"a\": 1}\n");
  EXPECT_EQ(read(dir / "out.json"), "{\"a\": 1}\n");
  EXPECT_TRUE(only_file_is(dir, "out.json"));
}

TEST(WholeFile, AFailingWriterLeavesTheOldFile) {
  const fs::path dir = fresh_dir("throw");
  write_file_whole((dir / "out.csv").string(), "old\n");
  EXPECT_THROW(write_file_whole((dir / "out.csv").string(),
                                [](std::ostream& out) {
                                  out << "half a ro";
                                  throw std::runtime_error("cut off");
                                }),
               std::runtime_error);
  EXPECT_EQ(read(dir / "out.csv"), "old\n");
  EXPECT_TRUE(only_file_is(dir, "out.csv"));
}

TEST(WholeFile, AMissingFolderIsNamed) {
  const fs::path target = fresh_dir("missing") / "no" / "such" / "out.json";
  try {
    write_file_whole(target.string(), "x");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(target));
}

}  // namespace
}  // namespace twinsim::io
