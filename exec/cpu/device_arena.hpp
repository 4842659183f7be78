#pragma once
// Memory the strict-device backend (strict_backend.hpp) hands out, mapped twice: one view for
// the host thread, one for the backend's stream. Both views map the same pages (a memfd), so a
// kernel on the stream writes what a copy later reads, while the host view's protection can
// differ:
//   * device memory: the host view is PROT_NONE for good; its addresses are the device
//     pointers the model passes around, and any host read or write of one faults, as the
//     host dereferencing a cudaMalloc pointer does. The stream translates each kernel
//     argument to the other view (worker_address) and reads and writes there.
//   * pinned host memory: the host view is read-write, except the pages an asynchronous
//     copy is still writing, which stay PROT_NONE until the host synchronizes, so a read
//     that forgot to wait faults instead of seeing stale bytes.
// A fault at an arena address is reported by a SIGSEGV handler that names the arena and the
// rule broken, then the process dies with the signal (death tests read that line).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace twinsim::exec {

class DeviceArena {
 public:
  enum class Kind { device, pinned_host };
  // `bytes` of address space in each view (pages are only backed once written).
  DeviceArena(Kind kind, std::size_t bytes);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // A block of `bytes` (rounded up to 64, or to a page for pinned memory) in the host
  // view; nullptr when the arena is full.
  void* allocate(std::size_t bytes);
  void release(void* p, std::size_t bytes) noexcept;

  bool contains(const void* p) const;
  // The stream's address of host-view address p (p must be in the arena).
  void* worker_address(const void* p) const;

  // Pinned memory only: makes the pages under [p, p + bytes) unreadable by the host until
  // unprotect_pending() (an asynchronous copy is writing them).
  void protect_pending(void* p, std::size_t bytes);
  void unprotect_pending();

  Kind kind() const { return kind_; }
  std::size_t used_bytes() const { return top_; }

 private:
  std::size_t round(std::size_t bytes) const;

  Kind kind_;
  std::size_t size_;
  int fd_ = -1;
  char* host_view_ = nullptr;
  char* worker_view_ = nullptr;
  std::size_t top_ = 0;                                     // bump pointer (offset)
  std::map<std::size_t, std::vector<std::size_t>> free_;    // free offsets by rounded size
  std::vector<std::pair<char*, std::size_t>> pending_;      // protected page ranges
};

}  // namespace twinsim::exec
