#include "exec/runtime/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <vector>

namespace twinsim::exec {

namespace {

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw MpiError(call, code);
}

// MPI counts are int; the executor's tensors are far smaller, so a larger count is a bug.
int as_mpi_count(std::size_t count, const char* call) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::length_error(std::string(call) + ": count " + std::to_string(count) +
                            " exceeds INT_MAX elements (MPI counts are int)");
  return static_cast<int>(count);
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::max ? MPI_MAX : MPI_SUM; }

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<std::size_t>(len));
}

}  // namespace

MpiError::MpiError(const std::string& call, int code)
    : std::runtime_error(call + " failed: " + mpi_error_text(code)), code_(code) {}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;
  check(MPI_Init(argc, argv), "MPI_Init");
  owns_ = true;
  // errors come back as codes and become MpiError instead of aborting the job
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

int MpiSession::world_rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiSession::world_size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  MPI_Comm dup;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(dup, true);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (owned_ && !finalised) MPI_Comm_free(&comm_);
}

void MpiCommunicator::all_reduce(float* data, std::size_t count, ReduceOp op) {
  const int n = as_mpi_count(count, "MPI_Allreduce");
  check(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, mpi_op(op), comm_), "MPI_Allreduce");
}

void MpiCommunicator::all_gather(const float* send, float* recv, std::size_t count) {
  const int n = as_mpi_count(count, "MPI_Allgather");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Allgather");
  const bool in_place = send == recv + static_cast<std::size_t>(rank_) * count;
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm_), "MPI_Allgather");
}

// A ring, as NCCL's reduce-scatter (NCCL docs, "Collective Operations: ReduceScatter";
// Patarasuk & Yuan 2009): in step k each rank passes its running sum of chunk r-1-k to
// the next rank and adds its own part of chunk r-2-k to what the previous one passed, so
// after size-1 steps rank r holds chunk r summed, having sent (size-1)/size of the
// buffer. Open MPI's MPI_Reduce_scatter_block on shared memory ran 6-11x slower than its
// all-gather of the same 1-16 MiB on this host (2 ranks; busbw 0.51-0.80 against
// 2.9-7.2 GB/s, `twinsim calibrate`, 2026-11-22 04:31 UTC), which a GPU cluster's NCCL
// does not. `recv` may be `send`'s own chunk (Megatron reduce-scatters a bucket in
// place): that chunk is only read in the last step, element by element as it is written.
// The scratch buffers are the communicator's own, as NCCL's are, outside the tracked memory.
void MpiCommunicator::reduce_scatter(const float* send, float* recv, std::size_t count) {
  constexpr int kTag = 7;  // apart from the pipeline's point-to-point messages
  const int n = as_mpi_count(count, "MPI_Sendrecv");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Sendrecv");
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  auto chunk = [&](int j) { return send + static_cast<std::size_t>((j % size_ + size_) % size_) * count; };
  if (size_ == 1) {
    std::copy_n(send, count, recv);
    return;
  }
  if (partial_.size() < count) {
    partial_.resize(count);
    incoming_.resize(count);
  }
  for (int k = 0; k < size_ - 1; ++k) {
    // the first step passes this rank's own part of chunk r-1 as it stands
    const float* outgoing = k == 0 ? chunk(rank_ - 1) : partial_.data();
    check(MPI_Sendrecv(outgoing, n, MPI_FLOAT, next, kTag, incoming_.data(), n, MPI_FLOAT, prev, kTag, comm_,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    const float* own = chunk(rank_ - 2 - k);
    float* out = k == size_ - 2 ? recv : partial_.data();  // the last sum is this rank's chunk
    for (std::size_t i = 0; i < count; ++i) out[i] = incoming_[i] + own[i];
  }
}

void MpiCommunicator::all_to_all(const float* send, float* recv, std::size_t count) {
  const int n = as_mpi_count(count, "MPI_Alltoall");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Alltoall");
  check(MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm_), "MPI_Alltoall");
}

void MpiCommunicator::broadcast(float* data, std::size_t count, int root) {
  check(MPI_Bcast(data, as_mpi_count(count, "MPI_Bcast"), MPI_FLOAT, root, comm_), "MPI_Bcast");
}

void MpiCommunicator::send(const float* data, std::size_t count, int peer) {
  check(MPI_Send(data, as_mpi_count(count, "MPI_Send"), MPI_FLOAT, peer, 0, comm_), "MPI_Send");
}

void MpiCommunicator::recv(float* data, std::size_t count, int peer) {
  check(MPI_Recv(data, as_mpi_count(count, "MPI_Recv"), MPI_FLOAT, peer, 0, comm_,
                 MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiCommunicator::send_recv(const float* send_data, std::size_t send_count, int send_peer,
                                float* recv_data, std::size_t recv_count, int recv_peer) {
  const int dest = send_peer < 0 ? MPI_PROC_NULL : send_peer;
  const int source = recv_peer < 0 ? MPI_PROC_NULL : recv_peer;
  check(MPI_Sendrecv(send_data, as_mpi_count(send_count, "MPI_Sendrecv"), MPI_FLOAT, dest, 0,
                     recv_data, as_mpi_count(recv_count, "MPI_Sendrecv"), MPI_FLOAT, source, 0,
                     comm_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
}

std::vector<std::string> MpiCommunicator::gather_bytes(std::string_view mine, int root) {
  const int my_len = as_mpi_count(mine.size(), "MPI_Gatherv");
  std::vector<int> lengths(rank_ == root ? static_cast<std::size_t>(size_) : 0);
  check(MPI_Gather(&my_len, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm_), "MPI_Gather");

  std::vector<int> offsets(lengths.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = as_mpi_count(total, "MPI_Gatherv");
    total += static_cast<std::size_t>(lengths[r]);
  }
  as_mpi_count(total, "MPI_Gatherv");
  std::string all(total, '\0');
  check(MPI_Gatherv(mine.data(), my_len, MPI_BYTE, all.data(), lengths.data(), offsets.data(),
                    MPI_BYTE, root, comm_),
        "MPI_Gatherv");

  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]),
                             static_cast<std::size_t>(lengths[r])));
  return out;
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub;
  check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(sub, true);
}

}  // namespace twinsim::exec
