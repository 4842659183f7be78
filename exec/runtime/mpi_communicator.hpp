#pragma once
// Communicator over MPI: one rank per simulated GPU on the CPU. Every call is a blocking
// MPI collective or point-to-point on host buffers: float32 as MPI_FLOAT, bf16 and fp16 as
// MPI_UINT16_T bit patterns, reduced by user-defined MPI_Ops that add in fp32.
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/communicator.hpp"
#include "exec/runtime/mpi_session.hpp"  // MpiSession, MpiError

namespace twinsim::exec {

class MpiCommunicator final : public Communicator {
 public:
  // A private duplicate of MPI_COMM_WORLD, so our traffic never matches anyone else's.
  static std::unique_ptr<MpiCommunicator> world();
  // Takes ownership of `comm` (freed in the destructor) when owned is true.
  MpiCommunicator(MPI_Comm comm, bool owned);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm native() const { return comm_; }

  void barrier() override;
  std::vector<std::string> gather_bytes(std::string_view mine, int root) override;
  std::unique_ptr<Communicator> split(int color, int key) override;

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
  // The ring of reduce_scatter, for one element type.
  template <class T>
  void ring_reduce_scatter(const T* send, T* recv, std::size_t count);

  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
  // reduce-scatter's running sum and incoming chunk, kept from call to call as NCCL keeps
  // its buffers: allocated per call they cost 2.1 ms of a 3.0 ms call on a 3 MiB block
  // (mmap, page faults, zeroing; ZeRO-1 in a training step, this host, 2026-11-22).
  // Raw bytes, sized for the largest call in bytes whatever its element type.
  std::vector<std::byte> partial_, incoming_;
};

}  // namespace twinsim::exec
