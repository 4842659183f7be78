#include "exec/cpu/device_arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace twinsim::exec {

namespace {

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// The arenas alive, for the fault handler (read in a signal handler: atomics, no locks).
struct ArenaRange {
  std::atomic<const char*> begin{nullptr};
  std::atomic<std::size_t> size{0};
  std::atomic<int> kind{0};
};
std::array<ArenaRange, 16> arenas;
struct sigaction previous_handler {};
std::atomic<bool> handler_installed{false};

void say(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// Names the rule a fault at an arena address broke, then dies of the signal as it would have.
void on_fault(int signal, siginfo_t* info, void* context) {
  const char* at = static_cast<const char*>(info->si_addr);
  for (const ArenaRange& a : arenas) {
    const char* begin = a.begin.load();
    if (begin == nullptr || at < begin || at >= begin + a.size.load()) continue;
    if (a.kind.load() == static_cast<int>(DeviceArena::Kind::device))
      say("strict-device backend: the host touched device memory outside a backend call "
          "(read it with Backend::copy_to_host, write it with copy_to_device)\n");
    else
      say("strict-device backend: the host touched a pinned buffer an asynchronous copy is still "
          "writing (missing Backend::synchronize before reading it)\n");
    break;
  }
  if (previous_handler.sa_flags & SA_SIGINFO) {
    if (previous_handler.sa_sigaction != nullptr) return previous_handler.sa_sigaction(signal, info, context);
  } else if (previous_handler.sa_handler != SIG_DFL && previous_handler.sa_handler != SIG_IGN) {
    return previous_handler.sa_handler(signal);
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void install_fault_handler() {
  if (handler_installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_handler);
}

// Arenas are made and destroyed by the host thread only; begin is stored last, so the
// handler never reads a half-written slot.
void register_arena(const char* begin, std::size_t size, DeviceArena::Kind kind) {
  for (ArenaRange& a : arenas) {
    if (a.begin.load() != nullptr) continue;
    a.size.store(size);
    a.kind.store(static_cast<int>(kind));
    a.begin.store(begin);
    return;
  }
}

void unregister_arena(const char* begin) {
  for (ArenaRange& a : arenas)
    if (a.begin.load() == begin) a.begin.store(nullptr);
}

char* map_view(int fd, std::size_t bytes, int protection) {
  void* p = mmap(nullptr, bytes, protection, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "strict-device arena: mmap");
  return static_cast<char*>(p);
}

}  // namespace

DeviceArena::DeviceArena(Kind kind, std::size_t bytes) : kind_(kind) {
  const std::size_t page = page_size();
  size_ = (bytes + page - 1) / page * page;
  fd_ = memfd_create(kind == Kind::device ? "twinsim-device" : "twinsim-pinned", MFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "strict-device arena: memfd_create");
  if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    close(fd_);
    throw std::system_error(errno, std::generic_category(), "strict-device arena: ftruncate");
  }
  host_view_ = map_view(fd_, size_, kind == Kind::device ? PROT_NONE : PROT_READ | PROT_WRITE);
  worker_view_ = map_view(fd_, size_, PROT_READ | PROT_WRITE);
  install_fault_handler();
  register_arena(host_view_, size_, kind);
}

DeviceArena::~DeviceArena() {
  unregister_arena(host_view_);
  munmap(host_view_, size_);
  munmap(worker_view_, size_);
  close(fd_);
}

std::size_t DeviceArena::round(std::size_t bytes) const {
  const std::size_t unit = kind_ == Kind::pinned_host ? page_size() : 64;
  return (bytes + unit - 1) / unit * unit;
}

void* DeviceArena::allocate(std::size_t bytes) {
  const std::size_t rounded = round(bytes);
  auto it = free_.find(rounded);
  if (it != free_.end() && !it->second.empty()) {
    const std::size_t at = it->second.back();
    it->second.pop_back();
    return host_view_ + at;
  }
  if (top_ + rounded > size_) return nullptr;
  const std::size_t at = top_;
  top_ += rounded;
  return host_view_ + at;
}

void DeviceArena::release(void* p, std::size_t bytes) noexcept {
  try {
    free_[round(bytes)].push_back(static_cast<std::size_t>(static_cast<char*>(p) - host_view_));
  } catch (...) {  // no room to remember it: the block is lost to this arena, not to the process
  }
}

bool DeviceArena::contains(const void* p) const {
  const char* c = static_cast<const char*>(p);
  return c >= host_view_ && c < host_view_ + size_;
}

void* DeviceArena::worker_address(const void* p) const {
  return worker_view_ + (static_cast<const char*>(p) - host_view_);
}

void DeviceArena::protect_pending(void* p, std::size_t bytes) {
  const std::size_t page = page_size();
  const std::size_t from = static_cast<std::size_t>(static_cast<char*>(p) - host_view_) / page * page;
  const std::size_t to = (static_cast<std::size_t>(static_cast<char*>(p) - host_view_) + bytes + page - 1) / page * page;
  if (mprotect(host_view_ + from, to - from, PROT_NONE) != 0)
    throw std::system_error(errno, std::generic_category(), "strict-device arena: mprotect");
  pending_.emplace_back(host_view_ + from, to - from);
}

void DeviceArena::unprotect_pending() {
  for (const auto& [at, bytes] : pending_) mprotect(at, bytes, PROT_READ | PROT_WRITE);
  pending_.clear();
}

}  // namespace twinsim::exec
