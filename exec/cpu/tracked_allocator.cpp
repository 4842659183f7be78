#include "exec/cpu/tracked_allocator.hpp"

#include <cstdlib>
#include <cstring>

namespace twinsim::exec {

namespace {
constexpr std::size_t kAlignment = 64;  // Allocator rounds every block to this
}

void* TrackedAllocator::reserve_block(std::size_t bytes) { return std::aligned_alloc(kAlignment, bytes); }

void TrackedAllocator::release_block(void* p, std::size_t) noexcept { std::free(p); }

void TrackedAllocator::fill_block(void* p, std::size_t bytes, unsigned char value) { std::memset(p, value, bytes); }

}  // namespace twinsim::exec
