#pragma once
// The executor's collective interface: one implementation over MPI (CPU ranks), one over
// NCCL (GPU ranks). Buffers are float32 on the host for MPI; the NCCL implementation
// takes device pointers. Collective semantics and argument order follow NCCL
// (ncclAllReduce, ncclAllGather, ncclReduceScatter, ...), counts are elements.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace twinsim::exec {

enum class ReduceOp { sum, max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual void all_reduce(float* data, std::size_t count, ReduceOp op = ReduceOp::sum) = 0;
  // recv holds size() * count elements, rank r's part at r * count; send may be this
  // rank's own part of recv (in place, as NCCL allows)
  virtual void all_gather(const float* send, float* recv, std::size_t count) = 0;
  // send holds size() * count elements; recv gets this rank's reduced part
  virtual void reduce_scatter(const float* send, float* recv, std::size_t count) = 0;
  // send and recv hold size() * count elements, part r goes to / comes from rank r
  virtual void all_to_all(const float* send, float* recv, std::size_t count) = 0;
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void send(const float* data, std::size_t count, int peer) = 0;
  virtual void recv(float* data, std::size_t count, int peer) = 0;
  virtual void barrier() = 0;

  // Sends to one peer and receives from another at once, so that two neighbouring
  // pipeline stages exchanging activations and gradients cannot deadlock (Megatron's
  // batched isend/irecv in p2p_communication.py). peer -1 skips that half.
  virtual void send_recv(const float* send_data, std::size_t send_count, int send_peer,
                         float* recv_data, std::size_t recv_count, int recv_peer) = 0;

  // Every rank's bytes at `root` (index = rank); other ranks get an empty vector.
  // For the profiler's events and other host-side records, not for tensors.
  virtual std::vector<std::string> gather_bytes(std::string_view mine, int root) = 0;

  // Ranks with the same color form a new communicator, ordered by key (MPI_Comm_split).
  // A negative color joins no group and returns nullptr (MPI_UNDEFINED).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
};

}  // namespace twinsim::exec
