#include "exec/cpu/staging_communicator.hpp"

#include <vector>

namespace twinsim::exec {

namespace {

// A buffer's host side for one collective: device memory staged through the backend, host
// memory used in place.
class Staged {
 public:
  Staged(Backend& backend, const void* buffer, Dtype type, std::size_t count)
      : backend_(backend), buffer_(const_cast<void*>(buffer)), bytes_(count * storage_bytes(type)),
        device_(buffer != nullptr && backend.host_must_stage(buffer)) {
    if (device_) storage_.resize(bytes_);
  }
  // The host copy of the device bytes (the collective reads them).
  void* fetched() {
    if (!device_) return buffer_;
    backend_.copy_to_host(storage_.data(), buffer_, bytes_);
    return storage_.data();
  }
  // Host room the collective writes, then sent back to the device by store().
  void* room() { return device_ ? storage_.data() : buffer_; }
  void store() {
    if (device_) backend_.copy_to_device(buffer_, storage_.data(), bytes_);
  }

 private:
  Backend& backend_;
  void* buffer_;
  std::size_t bytes_;
  bool device_;
  std::vector<unsigned char> storage_;
};

}  // namespace

std::unique_ptr<Communicator> StagingCommunicator::split(int color, int key) {
  std::unique_ptr<Communicator> group = host_.split(color, key);
  if (!group) return nullptr;
  return std::make_unique<StagingCommunicator>(backend_, std::move(group));
}

void StagingCommunicator::do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) {
  Staged buffer(backend_, data, type, count);
  void* host = buffer.fetched();
  with_storage(type, [&]<class T>() { host_.all_reduce(static_cast<T*>(host), count, op); });
  buffer.store();
}

void StagingCommunicator::do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) {
  Staged out(backend_, send, type, count), in(backend_, recv, type, count * size());
  const void* host_send = out.fetched();
  with_storage(type, [&]<class T>() {
    host_.all_gather(static_cast<const T*>(host_send), static_cast<T*>(in.room()), count);
  });
  in.store();
}

void StagingCommunicator::do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) {
  Staged out(backend_, send, type, count * size()), in(backend_, recv, type, count);
  const void* host_send = out.fetched();
  with_storage(type, [&]<class T>() {
    host_.reduce_scatter(static_cast<const T*>(host_send), static_cast<T*>(in.room()), count);
  });
  in.store();
}

void StagingCommunicator::do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) {
  Staged out(backend_, send, type, count * size()), in(backend_, recv, type, count * size());
  const void* host_send = out.fetched();
  with_storage(type, [&]<class T>() {
    host_.all_to_all(static_cast<const T*>(host_send), static_cast<T*>(in.room()), count);
  });
  in.store();
}

void StagingCommunicator::do_broadcast(Dtype type, void* data, std::size_t count, int root) {
  Staged buffer(backend_, data, type, count);
  void* host = buffer.fetched();
  with_storage(type, [&]<class T>() { host_.broadcast(static_cast<T*>(host), count, root); });
  buffer.store();
}

void StagingCommunicator::do_send(Dtype type, const void* data, std::size_t count, int peer) {
  Staged buffer(backend_, data, type, count);
  const void* host = buffer.fetched();
  with_storage(type, [&]<class T>() { host_.send(static_cast<const T*>(host), count, peer); });
}

void StagingCommunicator::do_recv(Dtype type, void* data, std::size_t count, int peer) {
  Staged buffer(backend_, data, type, count);
  with_storage(type, [&]<class T>() { host_.recv(static_cast<T*>(buffer.room()), count, peer); });
  buffer.store();
}

void StagingCommunicator::do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                                       void* recv_data, std::size_t recv_count, int recv_peer) {
  Staged out(backend_, send_peer >= 0 ? send_data : nullptr, type, send_count);
  Staged in(backend_, recv_peer >= 0 ? recv_data : nullptr, type, recv_count);
  const void* host_send = out.fetched();
  with_storage(type, [&]<class T>() {
    host_.send_recv<T>(static_cast<const T*>(host_send), send_count, send_peer, static_cast<T*>(in.room()),
                       recv_count, recv_peer);
  });
  in.store();
}

}  // namespace twinsim::exec
