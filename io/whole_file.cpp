#include "io/whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace twinsim::io {

namespace {

// beside the target (same file system, so the rename is atomic), unique per process
std::string temporary_for(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write '" + path + "': " + why);
}

// What is at `path` now (links followed): nothing (or a regular file) is replaced by a
// rename; a character device (/dev/null) or a FIFO is written in place; anything else is
// refused, since a rename would put a regular file where it was.
enum class Target { replace, in_place };

Target target_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Target::replace;  // a new path (or a dangling link)
  if (S_ISREG(st.st_mode)) return Target::replace;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Target::in_place;
  refuse(path, std::string(S_ISDIR(st.st_mode) ? "it is a folder" : "it is a block device, socket or other special file") +
                   "; an output is a regular file, a new path, a character device or a FIFO");
}

// Opens a character device or a FIFO for writing. A FIFO is opened without blocking: with
// no reader it is refused instead of waiting forever.
int open_in_place(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO) refuse(path, "it is a FIFO and no process reads it");
    refuse(path, std::generic_category().message(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    ::close(fd);
    refuse(path, "it changed while being opened");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // the writes may wait for the reader
  return fd;
}

void write_in_place(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream text;
  write(text);
  const std::string bytes = std::move(text).str();
  const int fd = open_in_place(path);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::generic_category().message(errno) : "no progress";
      ::close(fd);
      refuse(path, "a write failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) refuse(path, "closing it failed: " + std::generic_category().message(errno));
}

}  // namespace

void check_writable(const std::string& path) {
  if (target_of(path) == Target::in_place) {
    if (::access(path.c_str(), W_OK) != 0) refuse(path, "no permission to write it");
    return;
  }
  const std::string tmp = temporary_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) refuse(path, "cannot create " + tmp + " (missing folder or no permission)");
  }
  std::remove(tmp.c_str());
}

void write_file_whole(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (target_of(path) == Target::in_place) return write_in_place(path, write);
  const std::string tmp = temporary_for(path);
  auto fail = [&](const std::string& why) {
    std::remove(tmp.c_str());
    refuse(path, why);
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
  // the target may have changed while writing: a rename still never replaces a device
  try {
    if (target_of(path) == Target::in_place) fail("it became a device or FIFO while being written");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("renaming " + tmp + " over it failed: " + std::generic_category().message(errno));
}

void write_file_whole(const std::string& path, std::string_view text) {
  write_file_whole(path, [&](std::ostream& out) { out << text; });
}

}  // namespace twinsim::io
