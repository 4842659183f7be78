#pragma once
// Communicator over NCCL: one rank per GPU, on one node or many. Bootstrapped over MPI:
// rank 0 creates the NCCL unique id and broadcasts it with MPI_Bcast, then every rank
// joins with ncclCommInitRank (NCCL docs, "Creating a communicator with options" /
// the MPI example). Sub-groups come from ncclCommSplit, so ProcessGroups (which only
// calls split()) builds the TP/CP/DP/PP/EP groups on NCCL as it does on MPI.
//
// Buffers are device pointers, of float32, bf16 or fp16 (ncclFloat32, ncclBfloat16,
// ncclFloat16; NCCL rounds each reduction step's sum to the element type). Streams:
// collectives run on the communicator's own stream, so they can overlap compute as the
// simulator assumes. The inherited calls keep the stream order of the compute stream
// (kernels::cuda::current_stream()): the collective starts after the compute work
// enqueued before it, and compute enqueued after it waits for its result, all on the GPU,
// without blocking the host. To overlap, use the *_async calls, which return a Pending;
// keep enqueuing compute, and wait(pending) right before the result is needed (e.g. the
// DP gradient all-reduce of one bucket during the rest of the backward, as PyTorch DDP
// and Megatron do).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "exec/runtime/communicator.hpp"
#include "exec/runtime/mpi_communicator.hpp"

namespace twinsim::exec {

// Picks this rank's GPU: local rank on its node (MPI_COMM_TYPE_SHARED) modulo the GPUs
// visible, and makes it current (cudaSetDevice). Returns the device. A collective.
int select_local_device(const MpiCommunicator& world);

class NcclCommunicator final : public Communicator {
 public:
  // A collective over `host`: builds the NCCL communicator of the same ranks on each
  // rank's current device. `host` stays alive inside for host-side bytes and barriers.
  explicit NcclCommunicator(std::unique_ptr<MpiCommunicator> host);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  ncclComm_t native() const { return comm_; }
  cudaStream_t stream() const { return stream_; }

  // Waits for this rank's GPU work (compute and communication), then an MPI barrier.
  void barrier() override;
  // Host bytes: goes over MPI.
  std::vector<std::string> gather_bytes(std::string_view mine, int root) override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  // A collective in flight on stream(); wait() makes the compute stream wait for it.
  struct Pending {
    cudaEvent_t done = nullptr;
  };
  template <class T>
  Pending all_reduce_async(T* data, std::size_t count, ReduceOp op = ReduceOp::sum) {
    return enqueue_all_reduce(storage_dtype<T>(), data, count, op);
  }
  template <class T>
  Pending all_gather_async(const T* send, T* recv, std::size_t count) {
    return enqueue_all_gather(storage_dtype<T>(), send, recv, count);
  }
  template <class T>
  Pending reduce_scatter_async(const T* send, T* recv, std::size_t count) {
    return enqueue_reduce_scatter(storage_dtype<T>(), send, recv, count);
  }
  void wait(Pending& pending);

 private:
  void do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) override;
  void do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_broadcast(Dtype type, void* data, std::size_t count, int root) override;
  void do_send(Dtype type, const void* data, std::size_t count, int peer) override;
  void do_recv(Dtype type, void* data, std::size_t count, int peer) override;
  void do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                    void* recv_data, std::size_t recv_count, int recv_peer) override;
  Pending enqueue_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op);
  Pending enqueue_all_gather(Dtype type, const void* send, void* recv, std::size_t count);
  Pending enqueue_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count);

  NcclCommunicator(std::unique_ptr<MpiCommunicator> host, ncclComm_t comm);
  void create_stream();
  // Orders stream() after the compute stream's work so far, runs `enqueue` on stream(),
  // and returns the event marking its end.
  template <typename Enqueue>
  Pending launch(Enqueue&& enqueue);

  std::unique_ptr<MpiCommunicator> host_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> spare_events_;
};

}  // namespace twinsim::exec
