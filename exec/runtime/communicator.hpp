#pragma once
// The executor's collective interface: one implementation over MPI (CPU ranks), one over
// NCCL (GPU ranks). Buffers are float32 on the host for MPI; the NCCL implementation
// takes device pointers. Collective semantics and argument order follow NCCL
// (ncclAllReduce, ncclAllGather, ncclReduceScatter, ...), counts are elements.
#include <cstddef>
#include <memory>

namespace twinsim::exec {

enum class ReduceOp { sum, max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual void all_reduce(float* data, std::size_t count, ReduceOp op = ReduceOp::sum) = 0;
  // recv holds size() * count elements, rank r's part at r * count
  virtual void all_gather(const float* send, float* recv, std::size_t count) = 0;
  // send holds size() * count elements; recv gets this rank's reduced part
  virtual void reduce_scatter(const float* send, float* recv, std::size_t count) = 0;
  // send and recv hold size() * count elements, part r goes to / comes from rank r
  virtual void all_to_all(const float* send, float* recv, std::size_t count) = 0;
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void send(const float* data, std::size_t count, int peer) = 0;
  virtual void recv(float* data, std::size_t count, int peer) = 0;
  virtual void barrier() = 0;

  // Ranks with the same color form a new communicator, ordered by key (MPI_Comm_split).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
};

}  // namespace twinsim::exec
