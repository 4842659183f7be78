#include "io/whole_file.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <unistd.h>

namespace twinsim::io {

namespace {

// beside the target (same file system, so the rename is atomic), unique per process
std::string temporary_for(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

}  // namespace

void check_writable(const std::string& path) {
  const std::string tmp = temporary_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + path + "': cannot create " + tmp + " (missing folder or no permission)");
  }
  std::remove(tmp.c_str());
}

void write_file_whole(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string tmp = temporary_for(path);
  auto fail = [&](const std::string& why) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + why);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot create " + tmp + " (missing folder or no permission)");
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.flush();
    if (!out) fail("a write failed (disk full?)");
    out.close();
    if (out.fail()) fail("closing it failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("renaming " + tmp + " over it failed: " + std::generic_category().message(errno));
}

void write_file_whole(const std::string& path, std::string_view text) {
  write_file_whole(path, [&](std::ostream& out) { out << text; });
}

}  // namespace twinsim::io
