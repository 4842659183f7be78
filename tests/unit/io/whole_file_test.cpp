// Files written whole or not at all (io/whole_file): the content lands only after every
// write and the close succeeded; a failure names the path and leaves no partial file.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

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

// The message of the error `write` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& write) {
  try {
    write();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A private /dev/null (char 1:3) in a temporary folder, never the system's: mknod needs
// root (CAP_MKNOD), so the test skips without it.
TEST(WholeFile, ACharacterDeviceIsWrittenInPlaceNeverReplaced) {
  const fs::path dev = fresh_dir("chardev") / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) GTEST_SKIP() << "mknod needs root";
  EXPECT_NO_THROW(check_writable(dev.string()));
  EXPECT_NO_THROW(write_file_whole(dev.string(), "into the device\n"));
  EXPECT_TRUE(fs::is_character_file(dev)) << "a rename replaced the device node";
  EXPECT_TRUE(only_file_is(dev.parent_path(), "null"));
}

// A private /dev/full (char 1:7): every write fails with ENOSPC, and the node stays.
TEST(WholeFile, AFullDeviceFailsByNameAndStays) {
  const fs::path dev = fresh_dir("fulldev") / "full";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, ::makedev(1, 7)) != 0) GTEST_SKIP() << "mknod needs root";
  const std::string message = error_of([&] { write_file_whole(dev.string(), "x"); });
  EXPECT_NE(message.find("cannot write '" + dev.string() + "': a write failed"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_character_file(dev));
}

TEST(WholeFile, AFifoWithoutAReaderIsRefusedNotWaitedFor) {
  const fs::path fifo = fresh_dir("fifo_alone") / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(check_writable(fifo.string()));  // a reader may come before the output is written
  const std::string message = error_of([&] { write_file_whole(fifo.string(), "x"); });
  EXPECT_NE(message.find("it is a FIFO and no process reads it"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(WholeFile, AFifoWithAReaderGetsTheContent) {
  const fs::path fifo = fresh_dir("fifo_read") / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read(fifo); });  // blocks in open until the writer comes
  // the reader's open may not have happened yet: retry until it has (at most ~5 s)
  std::string message = "not tried";
  for (int tries = 0; tries < 500 && !message.empty(); ++tries) {
    message = error_of([&] { write_file_whole(fifo.string(), "through the pipe\n"); });
    if (!message.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!message.empty()) ::close(::open(fifo.c_str(), O_WRONLY));  // frees the reader so the test ends
  reader.join();
  EXPECT_EQ(message, "");
  EXPECT_EQ(received, "through the pipe\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(WholeFile, AFolderIsRefusedByName) {
  const fs::path dir = fresh_dir("folder");
  const std::string message = error_of([&] { check_writable(dir.string()); });
  EXPECT_NE(message.find("cannot write '" + dir.string() + "': it is a folder"), std::string::npos) << message;
  EXPECT_EQ(error_of([&] { write_file_whole(dir.string(), "x"); }), message);
  EXPECT_TRUE(fs::is_directory(dir));
}

}  // namespace
}  // namespace twinsim::io
