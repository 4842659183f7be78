#pragma once
// MPI's lifetime for one process, and MPI's error codes as exceptions. A library of its
// own (twinsim_mpi_session): `twinsim simulate` and `search` under mpirun need it without
// the executor (app/CMakeLists.txt builds `twinsim` without twinsim_exec).
#include <stdexcept>
#include <string>

namespace twinsim::exec {

// An MPI call that returned an error code; the message names the call and MPI's text.
class MpiError : public std::runtime_error {
 public:
  MpiError(const std::string& call, int code);
  int code() const { return code_; }

 private:
  int code_;
};

// Calls MPI_Init on construction and MPI_Finalize on destruction. Works without mpirun:
// Open MPI then starts a single-rank job ("singleton MPI_Init"). If MPI is already
// initialised (a test harness did it), this session neither initialises nor finalises.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  MpiSession() : MpiSession(nullptr, nullptr) {}
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const;
  int world_size() const;

 private:
  bool owns_ = false;
};

}  // namespace twinsim::exec
