#include "exec/runtime/recording_communicator.hpp"

namespace twinsim::exec {

std::unique_ptr<Communicator> RecordingCommunicator::split(int color, int key) {
  std::unique_ptr<Communicator> part = inner_->split(color, key);
  if (!part) return part;
  return std::make_unique<RecordingCommunicator>(std::move(part), group_, observer_);
}

// Each call goes through the wrapped communicator's public template (by element type), so
// its own traffic counts stay right.
namespace {
template <class F>
void typed(Dtype type, F&& call) {
  with_storage(type, [&]<class T>() { call(static_cast<T*>(nullptr)); });
}
}  // namespace

void RecordingCommunicator::do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) {
  note("all_reduce", type, count);
  typed(type, [&]<class T>(T*) { inner_->all_reduce(static_cast<T*>(data), count, op); });
}

void RecordingCommunicator::do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) {
  note("all_gather", type, count * static_cast<std::size_t>(size()));
  typed(type, [&]<class T>(T*) { inner_->all_gather(static_cast<const T*>(send), static_cast<T*>(recv), count); });
}

void RecordingCommunicator::do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) {
  note("reduce_scatter", type, count * static_cast<std::size_t>(size()));
  typed(type,
        [&]<class T>(T*) { inner_->reduce_scatter(static_cast<const T*>(send), static_cast<T*>(recv), count); });
}

void RecordingCommunicator::do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) {
  note("all_to_all", type, count * static_cast<std::size_t>(size()));
  typed(type, [&]<class T>(T*) { inner_->all_to_all(static_cast<const T*>(send), static_cast<T*>(recv), count); });
}

void RecordingCommunicator::do_broadcast(Dtype type, void* data, std::size_t count, int root) {
  note("broadcast", type, count);
  typed(type, [&]<class T>(T*) { inner_->broadcast(static_cast<T*>(data), count, root); });
}

void RecordingCommunicator::do_send(Dtype type, const void* data, std::size_t count, int peer) {
  note("send", type, count);
  typed(type, [&]<class T>(T*) { inner_->send(static_cast<const T*>(data), count, peer); });
}

void RecordingCommunicator::do_recv(Dtype type, void* data, std::size_t count, int peer) {
  note("recv", type, count);
  typed(type, [&]<class T>(T*) { inner_->recv(static_cast<T*>(data), count, peer); });
}

void RecordingCommunicator::do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                                         void* recv_data, std::size_t recv_count, int recv_peer) {
  if (send_peer >= 0) note("send", type, send_count);
  if (recv_peer >= 0) note("recv", type, recv_count);
  typed(type, [&]<class T>(T*) {
    inner_->send_recv<T>(static_cast<const T*>(send_data), send_count, send_peer, static_cast<T*>(recv_data),
                         recv_count, recv_peer);
  });
}

}  // namespace twinsim::exec
