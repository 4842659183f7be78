#pragma once
// A rank's swap file on local storage: plan.offload_device: nvme (ZeRO-Infinity's NVMe tier)
// keeps the optimizer's states here between steps, as DeepSpeed's optimizer swapper keeps
// them in files under its nvme_path. The file lives in $TWINSIM_SWAP_DIR (default the
// system's temporary directory), is named by process, and is removed when closed. The bytes
// every open swap file holds are counted apart from the GPU's and the host's memory: the
// measured report's memory.nvme_bytes.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

namespace twinsim::exec {

class SwapFile {
 public:
  SwapFile();  // creates the file (std::runtime_error naming it when it cannot)
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  // `bytes` from `data` at `offset`, growing the file as needed; and back.
  void write(std::int64_t offset, const void* data, std::size_t bytes);
  void read(std::int64_t offset, void* data, std::size_t bytes);
  std::int64_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  std::fstream file_;
  std::int64_t size_ = 0;
};

// The most bytes this process's swap files held at once.
std::int64_t swap_file_peak_bytes();

}  // namespace twinsim::exec
