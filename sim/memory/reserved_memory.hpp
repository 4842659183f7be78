#pragma once
// Memory as PyTorch's caching allocator reserves it (torch.cuda.max_memory_reserved) and what
// lives outside the allocator, for one training stage's GPU.
//
// The allocated peak is the analytic one (memory_report); what the allocation pattern adds on
// top (rounding, fragmentation) comes from replaying a step's allocations, tensor by tensor,
// through the caching allocator model (sim/memory/caching_allocator): two steps, so the
// second meets the optimizer states the first created lazily. The step's tensors are the
// simulator's own: the stage's weights, gradients and optimizer states per layer, each layer's
// saved tensors from the op list (models/layer_ops) for every micro-batch in flight, ZeRO-3's
// gathered parameters and reduce-scatter buffers layer by layer, the backward's working set
// (layer_backward_bytes), and the head's logits and loss (stack.loss_kernel).
#include <cstdint>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/memory/caching_allocator.hpp"

namespace twinsim {

struct StageMemory;

// The CUDA context of a process with lazy module loading (CUDA 11.7+, PyTorch's default):
// "the currently used ~300MB" (P. Blöchl, pytorch/pytorch#107667, 2023-08). Outside the
// allocator.
inline constexpr std::int64_t kCudaContextBytes = std::int64_t{300} << 20;

// The stream an allocation is made on: the caching allocator keeps a pool per stream, and a
// block freed on one stream is never handed to another (c10/cuda/CUDACachingAllocator.cpp,
// BlockPool per stream), so what a side stream caches is reserved beside the compute stream's.
enum class AllocStream { compute, all_gather, reduce_scatter };
inline constexpr int kAllocStreams = 3;

// One allocation or free of a step, by tensor id.
struct AllocationEvent {
  bool allocate = true;
  int tensor = 0;
  std::int64_t bytes = 0;
  AllocStream stream = AllocStream::compute;
};

// Two training steps of `stage`'s GPU as a PyTorch-native run allocates them.
std::vector<AllocationEvent> training_step_allocations(const Scenario& scenario, int stage,
                                                       const StageMemory& memory);

// Peaks over the streams' pools together (each pool its own allocator model).
struct AllocatorReplay {
  std::int64_t peak_allocated = 0, peak_reserved = 0;
  bool out_of_memory = false;
};
AllocatorReplay replay_allocations(const std::vector<AllocationEvent>& events, CachingAllocatorOptions options);

struct ReservedMemory {
  std::int64_t reserved_peak = 0;  // the allocator's reserve at its peak
  std::int64_t outside = 0;        // CUDA context and NCCL's buffers, beside the allocator
};

// The stage's reserve: its allocated peak inside the allocator (everything but NCCL's
// buffers) plus what the replay reserves beyond what it allocates, at most what the device
// leaves the allocator (it releases its cache before it fails), never below the allocated.
ReservedMemory training_reserved_memory(const Scenario& scenario, int stage, const StageMemory& memory);

}  // namespace twinsim
