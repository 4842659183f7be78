#pragma once
// The Allocator (exec/runtime/allocator.hpp: per-category accounting, block cache) over
// host memory: the CPU backend's device memory, and the host memory beside a GPU's
// (ZeRO-Offload's optimizer states) on every backend. It counts only what it hands out: the
// kernels' stack and the MPI library's internal buffers are not seen.
#include <cstddef>
#include <cstdint>

#include "exec/runtime/allocator.hpp"

namespace twinsim::exec {

class TrackedAllocator final : public Allocator {
 public:
  explicit TrackedAllocator(std::int64_t capacity_bytes = 0) : Allocator(capacity_bytes) {}
  ~TrackedAllocator() override { release_cache(); }

 protected:
  void* reserve_block(std::size_t bytes) override;
  void release_block(void* p, std::size_t bytes) noexcept override;
  void fill_block(void* p, std::size_t bytes, unsigned char value) override;
};

}  // namespace twinsim::exec
