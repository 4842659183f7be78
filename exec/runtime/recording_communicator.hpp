#pragma once
// A communicator that reports every collective it runs to an observer, then runs it on the
// communicator it wraps: the collectives of a step, recorded beside its kernel calls
// (exec/runtime/step_recorder.hpp) so a test lines them up with the simulator's prediction
// for the plan (tests/exec_mpi/record_mpi.cpp). ProcessGroups::record_collectives wraps each
// process group in one, named after the group.
//
// The size reported is the whole tensor, as the simulator's op list counts a collective
// (models/layer_ops.hpp, Collective::bytes): an all-reduce's buffer, an all-gather's gathered
// output, a reduce-scatter's and an all-to-all's input, a send's message.
#include <memory>
#include <string>
#include <string_view>

#include "exec/runtime/communicator.hpp"

namespace twinsim::exec {

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  // group: "tp", "dp", "pp", ...; collective: "all_reduce", "all_gather", "reduce_scatter",
  // "all_to_all", "broadcast", "send", "recv"
  virtual void on_collective(std::string_view group, std::string_view collective, std::size_t bytes) = 0;
};

class RecordingCommunicator final : public Communicator {
 public:
  RecordingCommunicator(std::unique_ptr<Communicator> inner, std::string group, CollectiveObserver& observer)
      : inner_(std::move(inner)), group_(std::move(group)), observer_(observer) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void barrier() override { inner_->barrier(); }
  std::vector<std::string> gather_bytes(std::string_view mine, int root) override {
    return inner_->gather_bytes(mine, root);
  }
  // A group split from a recorded one is recorded under the same name.
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
  void note(std::string_view collective, Dtype type, std::size_t count) {
    observer_.on_collective(group_, collective, count * storage_bytes(type));
  }

  std::unique_ptr<Communicator> inner_;
  std::string group_;
  CollectiveObserver& observer_;
};

}  // namespace twinsim::exec
