#include "exec/runtime/mpi_session.hpp"

#include <mpi.h>

#include <cstddef>

namespace twinsim::exec {

namespace {

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
  if (const int code = MPI_Init(argc, argv); code != MPI_SUCCESS) throw MpiError("MPI_Init", code);
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

}  // namespace twinsim::exec
