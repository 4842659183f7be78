#pragma once
// What a block needs at run time besides its weights: the compute backend whose kernels it
// calls (exec/runtime/backend.hpp), the tensor- and expert-parallel groups and the profiler
// that times every op under the simulator's name for it. A null group means a degree of 1;
// a null profiler times nothing; a null backend is the process's current one.
#include "models/op_names.hpp"
#include <string>

#include "exec/runtime/backend.hpp"
#include "exec/runtime/communicator.hpp"
#include "exec/runtime/profiler.hpp"

namespace twinsim::exec {

// The pass an op runs in, as the simulator names it.
// The pass an op's time belongs to, the last part of its name (models/op_names.hpp).
using Pass = op_names::OpPass;

// Times one op when there is a profiler; costs nothing otherwise.
class OpScope {
 public:
  // backend: the one whose kernels the op runs (null: the process's current one)
  OpScope(Profiler* profiler, std::string name, Backend* backend = nullptr);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Backend& device() const;

  Profiler* profiler_;
  Backend* backend_;
  std::string name_;
  Profiler::Clock::time_point start_;
};

class GatherBuffer;  // exec/model/tp_region.hpp

struct ModelContext {
  Communicator* tp = nullptr;
  Profiler* profiler = nullptr;
  // The rank's persistent all-gather buffer for sequence parallelism (set by the
  // TransformerStage); null: each gather allocates its own tensor.
  GatherBuffer* gather_buffer = nullptr;
  // The expert-parallel group (plan.ep > 1): the MoE layers send each token to the rank that
  // holds its expert and back (moe_block.hpp). Null: every rank holds every expert.
  Communicator* ep = nullptr;
  Backend* backend = nullptr;

  Backend& device() const { return backend ? *backend : current_backend(); }
  const KernelTable& kernels() const { return device().kernels(); }
  int tp_size() const { return tp ? tp->size() : 1; }
  int ep_size() const { return ep ? ep->size() : 1; }
  // "layer3.attn.qkv.fwd"; layer < 0 names an op outside the layers ("head.logits.fwd")
  OpScope op(int layer, const char* name, Pass pass) const;
};

}  // namespace twinsim::exec
