#include "app/mpi_exchange.hpp"

#include <cstdlib>
#include <stdexcept>

namespace twinsim {

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI call failed: ") + what);
}

// Every process's items in process order (MPI_Allgatherv of counts, then of the items).
template <typename T>
std::vector<T> allgather(MPI_Comm comm, int size, std::span<const T> local, MPI_Datatype type) {
  const int count = static_cast<int>(local.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  int total = 0;
  for (int p = 0; p < size; ++p) offsets[p] = total, total += counts[p];
  std::vector<T> all(static_cast<std::size_t>(total));
  check(MPI_Allgatherv(local.data(), count, type, all.data(), counts.data(), offsets.data(), type, comm),
        "MPI_Allgatherv");
  return all;
}

}  // namespace

bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

MpiExchange::MpiExchange() {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiExchange::~MpiExchange() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

double MpiExchange::min_all(double local) {
  double m = local;
  check(MPI_Allreduce(&local, &m, 1, MPI_DOUBLE, MPI_MIN, comm_), "MPI_Allreduce");
  return m;
}

bool MpiExchange::any_all(bool local) {
  int v = local ? 1 : 0, any = 0;
  check(MPI_Allreduce(&v, &any, 1, MPI_INT, MPI_LOR, comm_), "MPI_Allreduce");
  return any != 0;
}

std::vector<std::int32_t> MpiExchange::gather_all(std::span<const std::int32_t> local) {
  return allgather(comm_, size_, local, MPI_INT32_T);
}

std::vector<double> MpiExchange::gather_all(std::span<const double> local) {
  return allgather(comm_, size_, local, MPI_DOUBLE);
}

std::vector<std::byte> MpiExchange::gather_all(std::span<const std::byte> local) {
  return allgather(comm_, size_, local, MPI_BYTE);
}

}  // namespace twinsim
