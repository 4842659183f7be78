#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

namespace {
Backend* current = nullptr;
}

Backend& current_backend() { return current ? *current : default_backend(); }

void set_current_backend(Backend* backend) { current = backend; }

std::unique_ptr<Communicator> Backend::device_communicator(Communicator&) { return nullptr; }

}  // namespace twinsim::exec
