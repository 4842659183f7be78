#include "exec/runtime/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
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

// 16-bit elements travel as their bit patterns; only the reductions look inside them.
MPI_Datatype mpi_type(Dtype type) { return type == Dtype::fp32 ? MPI_FLOAT : MPI_UINT16_T; }

// Byte offset of element `index` of a buffer of `type`.
std::size_t offset_bytes(Dtype type, std::size_t index) { return index * storage_bytes(type); }

// --- 16-bit reductions --------------------------------------------------------------------

// One reduction step: x + y in fp32, rounded once to T (for float, plain x + y).
template <class T>
T add_rounded(T x, T y) {
  return kernels::from_float<T>(kernels::to_float(x) + kernels::to_float(y));
}

// The larger of two, as its own bits (nothing to round). Symmetric down to the bits, so
// every rank of an all-reduce gets the same result whatever order MPI combines in: a NaN
// wins (of two, the smaller pattern) and +0 beats -0, as IEEE 754-2019's maximum.
template <class T>
T max_of(T x, T y) {
  const float a = kernels::to_float(x), b = kernels::to_float(y);
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan && (!b_nan || x.bits < y.bits) ? x : y;
  if (a != b) return a > b ? x : y;
  return (x.bits & 0x8000u) ? y : x;  // equal values with different bits: only +0 and -0
}

// An MPI_User_function: inout[i] = combine(in[i], inout[i]).
template <class T, T (*Combine)(T, T)>
void combine_into(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Combine(a[i], b[i]);
}

// The user-defined reductions of bf16 and fp16 on MPI_UINT16_T, [fp16?][max?], made on
// first use. They are freed by MPI_Finalize whoever calls it (MpiSession, or a harness
// that initialised MPI): it first deletes MPI_COMM_SELF's attributes, which runs the
// delete callback of the one we hang on it (MPI standard, "Allowing User Functions at
// Process Termination").
struct Reduce16Ops {
  MPI_Op ops[2][2] = {{MPI_OP_NULL, MPI_OP_NULL}, {MPI_OP_NULL, MPI_OP_NULL}};
  bool made = false;
};

Reduce16Ops& reduce16_ops() {
  static Reduce16Ops ops;
  return ops;
}

int free_reduce16_ops(MPI_Comm, int, void*, void*) {
  Reduce16Ops& r = reduce16_ops();
  for (auto& row : r.ops)
    for (MPI_Op& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  r.made = false;
  return MPI_SUCCESS;
}

void make_reduce16_ops(Reduce16Ops& r) {
  using kernels::bf16, kernels::fp16;
  constexpr int kCommutative = 1;
  check(MPI_Op_create(&combine_into<bf16, add_rounded<bf16>>, kCommutative, &r.ops[0][0]), "MPI_Op_create");
  check(MPI_Op_create(&combine_into<bf16, max_of<bf16>>, kCommutative, &r.ops[0][1]), "MPI_Op_create");
  check(MPI_Op_create(&combine_into<fp16, add_rounded<fp16>>, kCommutative, &r.ops[1][0]), "MPI_Op_create");
  check(MPI_Op_create(&combine_into<fp16, max_of<fp16>>, kCommutative, &r.ops[1][1]), "MPI_Op_create");
  int key = MPI_KEYVAL_INVALID;
  check(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_reduce16_ops, &key, nullptr), "MPI_Comm_create_keyval");
  check(MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr), "MPI_Comm_set_attr");
  check(MPI_Comm_free_keyval(&key), "MPI_Comm_free_keyval");  // the attribute keeps it until then
  r.made = true;
}

MPI_Op reduce16_op(Dtype type, ReduceOp op) {
  Reduce16Ops& r = reduce16_ops();
  if (!r.made) make_reduce16_ops(r);
  return r.ops[type == Dtype::fp16][op == ReduceOp::max];
}

// The reduction of `op` on elements of `type`, for MPI_Allreduce.
MPI_Op reduction(Dtype type, ReduceOp op) { return type == Dtype::fp32 ? mpi_op(op) : reduce16_op(type, op); }

}  // namespace

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

void MpiCommunicator::do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) {
  const int n = as_mpi_count(count, "MPI_Allreduce");
  check(MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_type(type), reduction(type, op), comm_), "MPI_Allreduce");
}

void MpiCommunicator::do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) {
  const int n = as_mpi_count(count, "MPI_Allgather");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Allgather");
  const std::byte* own = static_cast<std::byte*>(recv) + offset_bytes(type, static_cast<std::size_t>(rank_) * count);
  const bool in_place = send == own;
  const MPI_Datatype t = mpi_type(type);
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : send, n, t, recv, n, t, comm_), "MPI_Allgather");
}

void MpiCommunicator::do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) {
  using kernels::bf16, kernels::fp16;
  switch (type) {
    case Dtype::fp32: return ring_reduce_scatter(static_cast<const float*>(send), static_cast<float*>(recv), count);
    case Dtype::bf16: return ring_reduce_scatter(static_cast<const bf16*>(send), static_cast<bf16*>(recv), count);
    case Dtype::fp16: return ring_reduce_scatter(static_cast<const fp16*>(send), static_cast<fp16*>(recv), count);
    default:  // the executor stores nothing else (storage_dtype.hpp)
      throw std::invalid_argument("reduce_scatter of " + std::string(to_string(type)) + ": the communicator moves fp32, bf16 or fp16");
  }
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
// 16-bit sums travel rounded to T and each step rounds once, as NCCL's ring does.
template <class T>
void MpiCommunicator::ring_reduce_scatter(const T* send, T* recv, std::size_t count) {
  constexpr int kTag = 7;  // apart from the pipeline's point-to-point messages
  const MPI_Datatype type = mpi_type(storage_dtype<T>());
  const int n = as_mpi_count(count, "MPI_Sendrecv");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Sendrecv");
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  auto chunk = [&](int j) { return send + static_cast<std::size_t>((j % size_ + size_) % size_) * count; };
  if (size_ == 1) {
    std::copy_n(send, count, recv);
    return;
  }
  if (partial_.size() < count * sizeof(T)) {
    partial_.resize(count * sizeof(T));
    incoming_.resize(count * sizeof(T));
  }
  T* partial = reinterpret_cast<T*>(partial_.data());
  T* incoming = reinterpret_cast<T*>(incoming_.data());
  for (int k = 0; k < size_ - 1; ++k) {
    // the first step passes this rank's own part of chunk r-1 as it stands
    const T* outgoing = k == 0 ? chunk(rank_ - 1) : partial;
    check(MPI_Sendrecv(outgoing, n, type, next, kTag, incoming, n, type, prev, kTag, comm_, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    const T* own = chunk(rank_ - 2 - k);
    T* out = k == size_ - 2 ? recv : partial;  // the last sum is this rank's chunk
    for (std::size_t i = 0; i < count; ++i) out[i] = add_rounded(incoming[i], own[i]);
  }
}

void MpiCommunicator::do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) {
  const int n = as_mpi_count(count, "MPI_Alltoall");
  as_mpi_count(count * static_cast<std::size_t>(size_), "MPI_Alltoall");
  const MPI_Datatype t = mpi_type(type);
  check(MPI_Alltoall(send, n, t, recv, n, t, comm_), "MPI_Alltoall");
}

void MpiCommunicator::do_broadcast(Dtype type, void* data, std::size_t count, int root) {
  check(MPI_Bcast(data, as_mpi_count(count, "MPI_Bcast"), mpi_type(type), root, comm_), "MPI_Bcast");
}

void MpiCommunicator::do_send(Dtype type, const void* data, std::size_t count, int peer) {
  check(MPI_Send(data, as_mpi_count(count, "MPI_Send"), mpi_type(type), peer, 0, comm_), "MPI_Send");
}

void MpiCommunicator::do_recv(Dtype type, void* data, std::size_t count, int peer) {
  check(MPI_Recv(data, as_mpi_count(count, "MPI_Recv"), mpi_type(type), peer, 0, comm_, MPI_STATUS_IGNORE),
        "MPI_Recv");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiCommunicator::do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                                   void* recv_data, std::size_t recv_count, int recv_peer) {
  const int dest = send_peer < 0 ? MPI_PROC_NULL : send_peer;
  const int source = recv_peer < 0 ? MPI_PROC_NULL : recv_peer;
  const MPI_Datatype t = mpi_type(type);
  check(MPI_Sendrecv(send_data, as_mpi_count(send_count, "MPI_Sendrecv"), t, dest, 0, recv_data,
                     as_mpi_count(recv_count, "MPI_Sendrecv"), t, source, 0, comm_, MPI_STATUS_IGNORE),
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
