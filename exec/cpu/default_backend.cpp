// The build's default backend (exec/runtime/backend.hpp): the CPU backend, or the one the
// environment names, so that every executor test can also run on the strict-device backend
// (TWINSIM_BACKEND=cpu-strict; tests/unit/backend/tests.cmake) without a line of its own.
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/strict_backend.hpp"

namespace twinsim::exec {

namespace {

std::unique_ptr<Backend> backend_from_environment() {
  const char* name = std::getenv("TWINSIM_BACKEND");
  const std::string chosen = name ? name : "cpu";
  if (chosen.empty() || chosen == "cpu") return std::make_unique<CpuBackend>();
  if (chosen == "cpu-strict") return std::make_unique<StrictDeviceBackend>();
  throw std::invalid_argument("TWINSIM_BACKEND=" + chosen + ": the executor's backends here are cpu and cpu-strict");
}

}  // namespace

Backend& default_backend() {
  static const std::unique_ptr<Backend> backend = backend_from_environment();
  return *backend;
}

}  // namespace twinsim::exec
