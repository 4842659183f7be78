// NCCL collectives across MPI ranks, one GPU per rank, checked against values every rank
// can compute by hand (small integers, exact in fp32, so the comparisons are exact).
// Run by ctest as `mpirun -n 2 test_cuda_nccl_mpi`; exits 77 (ctest: Skipped) on every
// rank when some rank has no GPU of its own, 1 when a check fails, 0 when all pass.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "exec/cuda/device_check.hpp"
#include "exec/cuda/nccl_communicator.hpp"
#include "kernels/cuda/check.hpp"

namespace {

using twinsim::exec::Communicator;
using twinsim::exec::NcclCommunicator;

constexpr int kSkip = 77;
constexpr std::size_t kCount = 1000;

struct Device {
  float* p = nullptr;
  std::size_t n;
  explicit Device(std::size_t count) : n(count) { CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float))); }
  ~Device() { cudaFree(p); }
  void put(const std::vector<float>& h) { CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice)); }
  std::vector<float> get() const {
    std::vector<float> h(n);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }
};

int failures = 0;

void expect_equal(const std::vector<float>& got, const std::vector<float>& want, const char* what, int rank) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      std::fprintf(stderr, "rank %d: %s[%zu] = %g, expected %g\n", rank, what, i, got[i], want[i]);
      ++failures;
      return;
    }
}

// The collectives of one communicator (the world or a sub-group).
void check_collectives(Communicator& comm, const char* name) {
  const int r = comm.rank(), n = comm.size();
  std::vector<float> mine(kCount), want(kCount);
  Device a(kCount), b(kCount * n);

  for (std::size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>(r + 1) + static_cast<float>(i % 7);
  a.put(mine);
  comm.all_reduce(a.p, kCount);
  for (std::size_t i = 0; i < kCount; ++i) want[i] = n * (n + 1) / 2.0f + n * static_cast<float>(i % 7);
  expect_equal(a.get(), want, (std::string(name) + " all_reduce sum").c_str(), r);

  a.put(mine);
  comm.all_reduce(a.p, kCount, twinsim::exec::ReduceOp::max);
  for (std::size_t i = 0; i < kCount; ++i) want[i] = static_cast<float>(n) + static_cast<float>(i % 7);
  expect_equal(a.get(), want, (std::string(name) + " all_reduce max").c_str(), r);

  for (std::size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>(r * 10000 + i);
  a.put(mine);
  comm.all_gather(a.p, b.p, kCount);
  std::vector<float> gathered(kCount * n);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < kCount; ++i) gathered[q * kCount + i] = static_cast<float>(q * 10000 + i);
  expect_equal(b.get(), gathered, (std::string(name) + " all_gather").c_str(), r);

  // reduce_scatter of part q = (rank + 1) * (q + 1): rank r receives (q = r) sum_ranks.
  std::vector<float> parts(kCount * n);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < kCount; ++i) parts[q * kCount + i] = static_cast<float>((r + 1) * (q + 1));
  b.put(parts);
  comm.reduce_scatter(b.p, a.p, kCount);
  for (std::size_t i = 0; i < kCount; ++i) want[i] = n * (n + 1) / 2.0f * (r + 1);
  expect_equal(a.get(), want, (std::string(name) + " reduce_scatter").c_str(), r);

  // all_to_all: part q of rank r is r * 100 + q; rank r receives part r of every rank q.
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < kCount; ++i) parts[q * kCount + i] = static_cast<float>(r * 100 + q);
  b.put(parts);
  Device c(kCount * n);
  comm.all_to_all(b.p, c.p, kCount);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < kCount; ++i) gathered[q * kCount + i] = static_cast<float>(q * 100 + r);
  expect_equal(c.get(), gathered, (std::string(name) + " all_to_all").c_str(), r);

  int root = n - 1;
  for (std::size_t i = 0; i < kCount; ++i) mine[i] = r == root ? static_cast<float>(i) : -1.0f;
  a.put(mine);
  comm.broadcast(a.p, kCount, root);
  for (std::size_t i = 0; i < kCount; ++i) want[i] = static_cast<float>(i);
  expect_equal(a.get(), want, (std::string(name) + " broadcast").c_str(), r);

  // ring: send to the next rank, receive from the previous one, at once
  for (std::size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>(r);
  a.put(mine);
  Device from_prev(kCount);
  comm.send_recv(a.p, kCount, (r + 1) % n, from_prev.p, kCount, (r + n - 1) % n);
  for (std::size_t i = 0; i < kCount; ++i) want[i] = static_cast<float>((r + n - 1) % n);
  expect_equal(from_prev.get(), want, (std::string(name) + " send_recv ring").c_str(), r);
}

}  // namespace

int main(int argc, char** argv) {
  twinsim::exec::MpiSession mpi(&argc, &argv);
  auto world = twinsim::exec::MpiCommunicator::world();
  std::string why;
  int devices = 0;
  bool usable = twinsim::exec::cuda_device_available(&why) && cudaGetDeviceCount(&devices) == cudaSuccess &&
                devices >= world->size();  // one GPU per rank, ranks on one node
  int all_usable = 0, mine = usable ? 1 : 0;
  MPI_Allreduce(&mine, &all_usable, 1, MPI_INT, MPI_MIN, world->native());
  if (!all_usable) {
    if (world->rank() == 0)
      std::printf("SKIPPED: %d ranks need %d GPUs; %s\n", world->size(), world->size(),
                  usable ? "another rank has none" : why.c_str());
    return kSkip;
  }
  try {
    twinsim::exec::select_local_device(*world);
    NcclCommunicator comm(twinsim::exec::MpiCommunicator::world());
    check_collectives(comm, "world");
    // every rank alone (color = rank), then all together again (one color), through ncclCommSplit
    auto alone = comm.split(comm.rank(), 0);
    check_collectives(*alone, "split(alone)");
    auto reversed = comm.split(0, comm.size() - comm.rank());  // key reverses the rank order
    if (reversed->rank() != comm.size() - 1 - comm.rank()) ++failures;
    check_collectives(*reversed, "split(reversed)");
    if (comm.split(-1, 0) != nullptr) ++failures;  // no color: no group
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world->rank(), e.what());
    ++failures;
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, world->native());
  if (world->rank() == 0) std::printf("%s: %d failure(s)\n", total ? "FAILED" : "PASSED", total);
  return total ? 1 : 0;
}
