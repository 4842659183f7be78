#pragma once
// The communicator over device buffers for a backend whose device memory the host's
// collective library cannot read (the strict-device backend here; a GPU without CUDA-aware
// MPI): each collective copies its device buffers to host staging through the backend,
// runs the host communicator (MPI) on them, and copies the result back. Buffers that are
// not such device memory (Backend::host_must_stage) go to the host communicator as they are.
#include <memory>

#include "exec/runtime/backend.hpp"
#include "exec/runtime/communicator.hpp"

namespace twinsim::exec {

class StagingCommunicator final : public Communicator {
 public:
  // `host` must outlive this one.
  StagingCommunicator(Backend& backend, Communicator& host) : backend_(backend), host_(host) {}
  // Owns `host` (a group split from another).
  StagingCommunicator(Backend& backend, std::unique_ptr<Communicator> host)
      : backend_(backend), owned_(std::move(host)), host_(*owned_) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  void barrier() override { host_.barrier(); }
  std::vector<std::string> gather_bytes(std::string_view mine, int root) override {
    return host_.gather_bytes(mine, root);
  }
  std::unique_ptr<Communicator> split(int color, int key) override;

 protected:
  void do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) override;
  void do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) override;
  void do_broadcast(Dtype type, void* data, std::size_t count, int root) override;
  void do_send(Dtype type, const void* data, std::size_t count, int peer) override;
  void do_recv(Dtype type, void* data, std::size_t count, int peer) override;
  void do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer, void* recv_data,
                    std::size_t recv_count, int recv_peer) override;

 private:
  Backend& backend_;
  std::unique_ptr<Communicator> owned_;
  Communicator& host_;
};

}  // namespace twinsim::exec
