#include "exec/cuda/nccl_communicator.hpp"

#include <stdexcept>
#include <string>

#include "exec/cuda/nccl_check.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"

namespace twinsim::exec {
namespace {

ncclRedOp_t to_nccl(ReduceOp op) { return op == ReduceOp::max ? ncclMax : ncclSum; }

ncclDataType_t to_nccl(Dtype type) {
  switch (type) {
    case Dtype::bf16: return ncclBfloat16;
    case Dtype::fp16: return ncclFloat16;
    case Dtype::fp32: return ncclFloat32;
    default:  // the executor stores nothing else (exec/runtime/storage_dtype.hpp)
      throw std::invalid_argument("NCCL collective of " + std::string(to_string(type)) + ": moves fp32, bf16 or fp16");
  }
}

// Part `index` of a device buffer of `count`-element parts.
const void* part(const void* base, Dtype type, int index, std::size_t count) {
  return static_cast<const char*>(base) + static_cast<std::size_t>(index) * count * storage_bytes(type);
}
void* part(void* base, Dtype type, int index, std::size_t count) {
  return static_cast<char*>(base) + static_cast<std::size_t>(index) * count * storage_bytes(type);
}

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw MpiError(call, code);
}

}  // namespace

// --- errors ------------------------------------------------------------------------------

std::string nccl_error_hint(ncclResult_t status) {
  switch (status) {
    case ncclUnhandledCudaError:
      return "a CUDA call inside NCCL failed; rerun with NCCL_DEBUG=INFO to see which";
    case ncclSystemError:
      return "a system call failed (network, or /dev/shm too small in a container); NCCL_DEBUG=INFO";
    case ncclInternalError:
      return "NCCL hit an internal error; rerun with NCCL_DEBUG=INFO";
    case ncclInvalidArgument:
      return "a count, root or pointer is wrong (a host pointer where a device one is needed?)";
    case ncclInvalidUsage:
      return "misuse, e.g. two ranks on one GPU or ranks calling different collectives";
    case ncclRemoteError:
      return "another rank failed or the network connection dropped";
    default:
      return "";
  }
}

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  throw kernels::cuda::CudaError(kernels::cuda::describe_failure(
      call, file, line, ncclGetErrorString(status), nccl_error_hint(status)));
}

// --- setup ---------------------------------------------------------------------------------

int select_local_device(const MpiCommunicator& world) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world.native(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int local_rank = 0;
  check_mpi(MPI_Comm_rank(node, &local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  int device = local_rank % devices;
  CUDA_CHECK(cudaSetDevice(device));
  return device;
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<MpiCommunicator> host) : host_(std::move(host)) {
  ncclUniqueId id{};
  if (host_->rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, host_->native()), "MPI_Bcast(ncclUniqueId)");
  NCCL_CHECK(ncclCommInitRank(&comm_, host_->size(), id, host_->rank()));
  create_stream();
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<MpiCommunicator> host, ncclComm_t comm)
    : host_(std::move(host)), comm_(comm) {
  create_stream();
}

void NcclCommunicator::create_stream() {
  // Non-blocking: no implicit ordering with the legacy default stream, which may be the
  // compute stream; the ordering we need is made explicit with events.
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

NcclCommunicator::~NcclCommunicator() {
  // Destructors must not throw: errors are dropped, the process is usually ending.
  cudaStreamSynchronize(stream_);
  ncclCommDestroy(comm_);
  cudaStreamDestroy(stream_);
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
}

// --- stream ordering -------------------------------------------------------------------------

template <typename Enqueue>
NcclCommunicator::Pending NcclCommunicator::launch(Enqueue&& enqueue) {
  auto take_event = [&] {
    cudaEvent_t e = nullptr;
    if (spare_events_.empty()) {
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    } else {
      e = spare_events_.back();
      spare_events_.pop_back();
    }
    return e;
  };
  cudaEvent_t ready = take_event();
  CUDA_CHECK(cudaEventRecord(ready, kernels::cuda::current_stream()));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  // The wait above captured the event's current record, so it can be reused at once.
  spare_events_.push_back(ready);
  enqueue();
  cudaEvent_t done = take_event();
  CUDA_CHECK(cudaEventRecord(done, stream_));
  return Pending{done};
}

void NcclCommunicator::wait(Pending& pending) {
  if (pending.done == nullptr) return;
  CUDA_CHECK(cudaStreamWaitEvent(kernels::cuda::current_stream(), pending.done, 0));
  spare_events_.push_back(pending.done);
  pending.done = nullptr;
}

// --- collectives -----------------------------------------------------------------------------

NcclCommunicator::Pending NcclCommunicator::enqueue_all_reduce(Dtype type, void* data, std::size_t count,
                                                               ReduceOp op) {
  return launch([&] { NCCL_CHECK(ncclAllReduce(data, data, count, to_nccl(type), to_nccl(op), comm_, stream_)); });
}

NcclCommunicator::Pending NcclCommunicator::enqueue_all_gather(Dtype type, const void* send, void* recv,
                                                               std::size_t count) {
  return launch([&] { NCCL_CHECK(ncclAllGather(send, recv, count, to_nccl(type), comm_, stream_)); });
}

NcclCommunicator::Pending NcclCommunicator::enqueue_reduce_scatter(Dtype type, const void* send, void* recv,
                                                                   std::size_t count) {
  return launch(
      [&] { NCCL_CHECK(ncclReduceScatter(send, recv, count, to_nccl(type), ncclSum, comm_, stream_)); });
}

void NcclCommunicator::do_all_reduce(Dtype type, void* data, std::size_t count, ReduceOp op) {
  Pending p = enqueue_all_reduce(type, data, count, op);
  wait(p);
}

void NcclCommunicator::do_all_gather(Dtype type, const void* send, void* recv, std::size_t count) {
  Pending p = enqueue_all_gather(type, send, recv, count);
  wait(p);
}

void NcclCommunicator::do_reduce_scatter(Dtype type, const void* send, void* recv, std::size_t count) {
  Pending p = enqueue_reduce_scatter(type, send, recv, count);
  wait(p);
}

// All-to-all as one group of send/recv pairs (the nccl-tests alltoall pattern), which
// works on every NCCL 2.x; part r of send goes to rank r, part r of recv comes from it.
void NcclCommunicator::do_all_to_all(Dtype type, const void* send, void* recv, std::size_t count) {
  const ncclDataType_t t = to_nccl(type);
  Pending p = launch([&] {
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size(); ++r) {
      NCCL_CHECK(ncclSend(part(send, type, r, count), count, t, r, comm_, stream_));
      NCCL_CHECK(ncclRecv(part(recv, type, r, count), count, t, r, comm_, stream_));
    }
    NCCL_CHECK(ncclGroupEnd());
  });
  wait(p);
}

void NcclCommunicator::do_broadcast(Dtype type, void* data, std::size_t count, int root) {
  Pending p = launch([&] { NCCL_CHECK(ncclBroadcast(data, data, count, to_nccl(type), root, comm_, stream_)); });
  wait(p);
}

void NcclCommunicator::do_send(Dtype type, const void* data, std::size_t count, int peer) {
  Pending p = launch([&] { NCCL_CHECK(ncclSend(data, count, to_nccl(type), peer, comm_, stream_)); });
  wait(p);
}

void NcclCommunicator::do_recv(Dtype type, void* data, std::size_t count, int peer) {
  Pending p = launch([&] { NCCL_CHECK(ncclRecv(data, count, to_nccl(type), peer, comm_, stream_)); });
  wait(p);
}

// Both halves in one NCCL group, so two neighbouring pipeline stages that send to each
// other at once cannot deadlock (NCCL docs, "Group Calls": point-to-point).
void NcclCommunicator::do_send_recv(Dtype type, const void* send_data, std::size_t send_count, int send_peer,
                                    void* recv_data, std::size_t recv_count, int recv_peer) {
  const ncclDataType_t t = to_nccl(type);
  Pending p = launch([&] {
    NCCL_CHECK(ncclGroupStart());
    if (send_peer >= 0) NCCL_CHECK(ncclSend(send_data, send_count, t, send_peer, comm_, stream_));
    if (recv_peer >= 0) NCCL_CHECK(ncclRecv(recv_data, recv_count, t, recv_peer, comm_, stream_));
    NCCL_CHECK(ncclGroupEnd());
  });
  wait(p);
}

void NcclCommunicator::barrier() {
  CUDA_CHECK(cudaStreamSynchronize(kernels::cuda::current_stream()));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  host_->barrier();
}

std::vector<std::string> NcclCommunicator::gather_bytes(std::string_view mine, int root) {
  return host_->gather_bytes(mine, root);
}

// Both splits are collectives over the same ranks, called in the same order on every rank.
std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  ncclComm_t sub = nullptr;
  NCCL_CHECK(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
  std::unique_ptr<Communicator> host_sub = host_->split(color, key);
  if (color < 0) return nullptr;
  auto* mpi_sub = dynamic_cast<MpiCommunicator*>(host_sub.get());
  if (mpi_sub == nullptr) throw std::logic_error("NcclCommunicator::split: host split is not MPI");
  host_sub.release();
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::unique_ptr<MpiCommunicator>(mpi_sub), sub));
}

}  // namespace twinsim::exec
