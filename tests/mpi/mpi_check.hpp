#pragma once
// A minimal check harness for MPI test programs: every rank checks its own results, and
// the exit status is non-zero on every rank when any rank saw a failure.
#include <cstdio>
#include <string>

#include "exec/runtime/communicator.hpp"

namespace twinsim::exec::mpi_test {

inline int& failures() {
  static int count = 0;
  return count;
}

inline void report(bool ok, const char* what, const char* file, int line, const std::string& detail) {
  if (ok) return;
  ++failures();
  std::fprintf(stderr, "%s:%d: check failed: %s %s\n", file, line, what, detail.c_str());
}

// Every rank returns the same status: 1 if any rank failed.
inline int finish(Communicator& world, const char* name) {
  float failed = static_cast<float>(failures());
  world.all_reduce(&failed, 1, ReduceOp::sum);
  if (world.rank() == 0)
    std::printf("%s: %d ranks, %s (%g failed checks)\n", name, world.size(),
                failed == 0 ? "all checks passed" : "FAILED", failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace twinsim::exec::mpi_test

#define MPI_CHECK(cond, detail) \
  ::twinsim::exec::mpi_test::report((cond), #cond, __FILE__, __LINE__, (detail))
