#pragma once
// The executor's collective interface: one implementation over MPI (CPU ranks), one over
// NCCL (GPU ranks). Buffers are on the host for MPI; the NCCL implementation takes device
// pointers. Collective semantics and argument order follow NCCL (ncclAllReduce,
// ncclAllGather, ncclReduceScatter, ...), counts are elements.
//
// Elements are float32, bf16 or fp16 (kernels/common/storage.hpp): mixed-precision training
// moves 16-bit gradients, weights and activations. A reduction of 16-bit elements adds in
// fp32 and rounds to the element type once per reduction step, as NCCL does per ring step,
// so a sum over n ranks carries up to n - 1 roundings.
//
// The public calls are templates over the element type and forward to type-erased
// virtuals (the non-virtual interface idiom): an implementation writes each collective
// once, switching on Dtype where it must (a datatype, a reduction), and callers keep
// their typed pointers.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "exec/runtime/storage_dtype.hpp"

namespace twinsim::exec {

enum class ReduceOp { sum, max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  template <class T>
  void all_reduce(T* data, std::size_t count, ReduceOp op = ReduceOp::sum) {
    const Counted c(*this, ring_bytes(2, count * sizeof(T)));  // reduce-scatter + all-gather
    do_all_reduce(storage_dtype<T>(), data, count, op);
  }
  // recv holds size() * count elements, rank r's part at r * count; send may be this
  // rank's own part of recv (in place, as NCCL allows)
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t count) {
    const Counted c(*this, ring_bytes(1, size() * count * sizeof(T)));
    do_all_gather(storage_dtype<T>(), send, recv, count);
  }
  // send holds size() * count elements; recv gets this rank's reduced part; recv may be
  // send's own part (in place, as NCCL allows)
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t count) {
    const Counted c(*this, ring_bytes(1, size() * count * sizeof(T)));
    do_reduce_scatter(storage_dtype<T>(), send, recv, count);
  }
  // send and recv hold size() * count elements, part r goes to / comes from rank r
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count) {
    const Counted c(*this, ring_bytes(1, size() * count * sizeof(T)));
    do_all_to_all(storage_dtype<T>(), send, recv, count);
  }
  template <class T>
  void broadcast(T* data, std::size_t count, int root) {
    const Counted c(*this, size() > 1 ? count * sizeof(T) : 0);
    do_broadcast(storage_dtype<T>(), data, count, root);
  }
  template <class T>
  void send(const T* data, std::size_t count, int peer) {
    const Counted c(*this, count * sizeof(T));
    do_send(storage_dtype<T>(), data, count, peer);
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer) {
    const Counted c(*this, 0);
    do_recv(storage_dtype<T>(), data, count, peer);
  }
  virtual void barrier() = 0;

  // Sends to one peer and receives from another at once, so that two neighbouring
  // pipeline stages exchanging activations and gradients cannot deadlock (Megatron's
  // batched isend/irecv in p2p_communication.py). peer -1 skips that half. The element
  // type comes from recv_data, so send_data may be nullptr; with recv_data nullptr the
  // overload below takes it from send_data (both nullptr: name T, send_recv<float>(...)).
  template <class T>
  void send_recv(const std::type_identity_t<T>* send_data, std::size_t send_count, int send_peer,
                 T* recv_data, std::size_t recv_count, int recv_peer) {
    const Counted c(*this, send_peer >= 0 ? send_count * sizeof(T) : 0);
    do_send_recv(storage_dtype<T>(), send_data, send_count, send_peer, recv_data, recv_count, recv_peer);
  }
  template <class T>
  void send_recv(const T* send_data, std::size_t send_count, int send_peer, std::nullptr_t,
                 std::size_t recv_count, int recv_peer) {
    const Counted c(*this, send_peer >= 0 ? send_count * sizeof(T) : 0);
    do_send_recv(storage_dtype<T>(), send_data, send_count, send_peer, nullptr, recv_count, recv_peer);
  }

  // Every rank's bytes at `root` (index = rank); other ranks get an empty vector.
  // For the profiler's events and other host-side records, not for tensors.
  virtual std::vector<std::string> gather_bytes(std::string_view mine, int root) = 0;

  // Ranks with the same color form a new communicator, ordered by key (MPI_Comm_split).
  // A negative color joins no group and returns nullptr (MPI_UNDEFINED).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // What this rank sent through this communicator and how long its calls took (live
  // metrics, exec/runtime/metrics.hpp). Bytes are a ring's per-rank traffic, as nccl-tests
  // counts bus bandwidth (doc/PERFORMANCE.md): an all-reduce 2 (n-1)/n of the buffer,
  // all-gather, reduce-scatter and all-to-all (n-1)/n of the whole buffer; a broadcast or
  // a send the buffer. Read by the calling thread only.
  struct Traffic {
    std::int64_t bytes_sent = 0;
    std::int64_t calls = 0;
    double busy_s = 0;  // wall time inside the calls
  };
  const Traffic& traffic() const { return traffic_; }

 protected:
  // The collectives above with the element type as a value; pointers hold elements of
  // `type`, counts are elements.
  virtual void do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) = 0;
  virtual void do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) = 0;
  virtual void do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) = 0;
  virtual void do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) = 0;
  virtual void do_broadcast(Dtype type, void* data, std::size_t count, int root) = 0;
  virtual void do_send(Dtype type, const void* data, std::size_t count, int peer) = 0;
  virtual void do_recv(Dtype type, void* data, std::size_t count, int peer) = 0;
  virtual void do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                            void* recv_data, std::size_t recv_count, int recv_peer) = 0;

 private:
  // `phases` ring passes over `bytes`: each rank sends (n-1)/n of it per pass
  std::int64_t ring_bytes(int phases, std::size_t bytes) const {
    const std::int64_t n = size();
    return n > 1 ? phases * static_cast<std::int64_t>(bytes) * (n - 1) / n : 0;
  }
  // Counts one call: its bytes now, its time when it returns.
  class Counted {
   public:
    Counted(Communicator& comm, std::int64_t bytes) : comm_(comm), start_(std::chrono::steady_clock::now()) {
      comm_.traffic_.bytes_sent += bytes;
      ++comm_.traffic_.calls;
    }
    ~Counted() {
      comm_.traffic_.busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;

   private:
    Communicator& comm_;
    std::chrono::steady_clock::time_point start_;
  };
  Traffic traffic_;
};

}  // namespace twinsim::exec
