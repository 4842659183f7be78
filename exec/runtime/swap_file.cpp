#include "exec/runtime/swap_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace twinsim::exec {

namespace {

// over this process's swap files (a rank is one process, its optimizer one thread)
std::int64_t open_bytes = 0, peak_bytes = 0;
int next_id = 0;

std::filesystem::path swap_dir() {
  if (const char* dir = std::getenv("TWINSIM_SWAP_DIR"); dir && *dir) return dir;
  return std::filesystem::temp_directory_path();
}

}  // namespace

SwapFile::SwapFile()
    : path_(swap_dir() / ("twinsim-swap-" + std::to_string(::getpid()) + "-" + std::to_string(next_id++) + ".bin")) {
  file_.open(path_, std::ios::in | std::ios::out | std::ios::binary | std::ios::trunc);
  if (!file_) throw std::runtime_error("plan.offload_device=nvme: cannot create the swap file " + path_.string());
}

SwapFile::~SwapFile() {
  file_.close();
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
  open_bytes -= size_;
}

void SwapFile::write(std::int64_t offset, const void* data, std::size_t bytes) {
  file_.seekp(offset);
  file_.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  file_.flush();
  if (!file_) throw std::runtime_error("plan.offload_device=nvme: writing the swap file " + path_.string() + " failed");
  const std::int64_t end = offset + static_cast<std::int64_t>(bytes);
  if (end > size_) {
    open_bytes += end - size_;
    size_ = end;
    peak_bytes = std::max(peak_bytes, open_bytes);
  }
}

void SwapFile::read(std::int64_t offset, void* data, std::size_t bytes) {
  if (offset + static_cast<std::int64_t>(bytes) > size_)
    throw std::logic_error("swap file " + path_.string() + ": reading past what was written");
  file_.seekg(offset);
  file_.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
  if (!file_) throw std::runtime_error("plan.offload_device=nvme: reading the swap file " + path_.string() + " failed");
}

std::int64_t swap_file_peak_bytes() { return peak_bytes; }

}  // namespace twinsim::exec
