#pragma once
// A compute backend: what the executor's model needs from a device, in one interface, so
// the model, the training loop and the runtime are written once and run on the host
// (exec/cpu/cpu_backend.hpp), on the strict-device CPU backend that behaves like a GPU
// where it matters (exec/cpu/strict_backend.hpp), or on a GPU (CUDA and NCCL).
// docs/DESIGN.md: "CPU and CUDA are two backends of one model, never two models".
//
// Its parts, each a seam a GPU backend fills with its own:
//   * the kernel table every forward/backward pair goes through (kernel_table.hpp);
//   * device memory behind the Allocator interface, with the report's per-category
//     accounting (allocator.hpp), and the host memory beside it;
//   * host <-> device copies and a synchronize: kernels are enqueued on the backend's
//     stream and may run after the call returns, as on a GPU;
//   * the end of a timed op (the profiler times kernels, not their launch);
//   * the communicator over device buffers (exec/runtime/communicator.hpp), which the
//     process groups build for the backend (exec/runtime/process_groups.hpp).
//
// The process has one current backend (set_current_backend), as it has one GPU per rank;
// a ModelContext may name another.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "exec/runtime/allocator.hpp"
#include "exec/runtime/communicator.hpp"
#include "exec/runtime/kernel_table.hpp"

namespace twinsim::exec {

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu", "cpu-strict", "cuda": the name the run's report gives the device.
  virtual std::string_view name() const = 0;
  virtual const KernelTable& kernels() const = 0;
  // The kernel table over host memory, run on the calling thread: ZeRO-Offload's update of the
  // states it keeps on the host (DeepSpeed's CPU Adam; Ren et al. 2021 §4.2). The CPU
  // backend's own table; the CPU kernels beside a device's.
  virtual const KernelTable& host_kernels() const = 0;

  // The allocator Tensors draw device memory from when no other is set (tensor.hpp).
  virtual Allocator& device_allocator() = 0;
  // A device allocator of its own (one per run): capacity 0 = no limit.
  virtual std::unique_ptr<Allocator> make_device_allocator(std::int64_t capacity_bytes) const = 0;
  // Host memory beside the device (ZeRO-Offload's states, checkpoint staging).
  virtual std::unique_ptr<Allocator> make_host_allocator() const = 0;

  // Copies after the work enqueued before them; to_host returns when the bytes are there.
  virtual void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) = 0;
  // Waits until every kernel and copy enqueued so far has run.
  virtual void synchronize() = 0;

  // Called where a timed op ends, before its end time is read: waits for the op's kernels
  // where they run asynchronously, so host time measures them and not their launch.
  virtual void end_timed_op() = 0;

  // Whether the host may read and write device memory directly (the CPU backend: yes;
  // the strict-device backend and a GPU: no, only through copies). Code that walks a
  // tensor on the host asks, and stages through a copy when not.
  virtual bool host_can_access_device() const = 0;
  // Whether p is device memory a host library (MPI) cannot read, so a collective on it must
  // go through host staging (exec/cpu/staging_communicator.hpp).
  virtual bool host_must_stage(const void* p) const = 0;

  // The communicator the job's process groups are built on (exec/runtime/process_groups.hpp),
  // for collectives on this backend's device buffers, over the job's MPI world: NCCL on a
  // GPU, host staging on the strict-device backend. nullptr: the world serves as it is
  // (device memory is host memory). A collective over world.
  virtual std::unique_ptr<Communicator> device_communicator(Communicator& world);
};

// The process's backend: the build's default (defined by the CPU backend, exec/cpu/) until
// set_current_backend names another; nullptr restores the default.
Backend& current_backend();
void set_current_backend(Backend* backend);
Backend& default_backend();

}  // namespace twinsim::exec
