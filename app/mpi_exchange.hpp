#pragma once
// The event engine's Exchange (sim/engine/exchange.hpp) over MPI, for a step simulation
// split over the processes mpirun starts (twinsim simulate --fidelity full under mpirun)
// and the search's sharded pass (twinsim search under mpirun).
#include <mpi.h>

#include "sim/engine/exchange.hpp"

namespace twinsim {

// Whether mpirun (Open MPI, MPICH or a PMIx launcher) started this process.
bool launched_by_mpirun();

class MpiExchange final : public engine::Exchange {
 public:
  MpiExchange();  // on a private duplicate of MPI_COMM_WORLD; MPI must be initialised
  ~MpiExchange() override;
  MpiExchange(const MpiExchange&) = delete;
  MpiExchange& operator=(const MpiExchange&) = delete;

  int process() const override { return rank_; }
  int processes() const override { return size_; }
  double min_all(double local) override;
  bool any_all(bool local) override;
  std::vector<std::int32_t> gather_all(std::span<const std::int32_t> local) override;
  std::vector<double> gather_all(std::span<const double> local) override;
  std::vector<std::byte> gather_all(std::span<const std::byte> local) override;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace twinsim
