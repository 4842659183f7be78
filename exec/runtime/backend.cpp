#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

namespace {
Backend* current = nullptr;
}

Backend& current_backend() { return current ? *current : default_backend(); }

void set_current_backend(Backend* backend) { current = backend; }

}  // namespace twinsim::exec
