// A training step's collectives, recorded on every rank (exec/runtime/step_recorder.hpp with
// ProcessGroups::record_collectives), against what the simulator prices for the same plan:
//   * tp / cp: every collective of the op list (models/layer_ops.hpp, head_ops.hpp), by op
//     name, pass, group, kind and bytes, once per micro-batch (the layers' forward ones again
//     under full recompute); the step's-end TP sum of the replicated grads
//     (models/param_count.hpp tp_summed_grad_params) once; and no other such collective;
//   * ep: the MoE exchange in exactly the op list's dispatch / combine ops and passes, sending
//     at most the buffer the op list prices (compare_ep says why not equal);
//   * dp (plan.dp > 1, no ZeRO, dense, tp = pp = 1): dp.grad_reduce all-reduces every
//     gradient once, grad_element_bytes (sim/training/transfer_bytes.hpp) an element;
//   * ZeRO-3 (dense, dp > 1): check_zero3's parameter gathers and gradient reduce-scatters;
//     ZeRO-1/2: check_zero12's; under hybrid sharding (plan.dp_replicate > 1) both inside the
//     shard group, and check_replicas' all-reduce of each shard over its replicas;
//   * pp: each stage sends each micro-batch's activations (or their gradients) once per
//     boundary it owns, pipeline_transfer_bytes each (the same header).
// The executor and the op list are separate code: a collective the executor runs that the
// simulator does not price, or prices differently, fails here. Exits non-zero on every rank
// if any rank found a difference.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "exec/runtime/backend.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "exec/runtime/step_recorder.hpp"
#include "exec/train/trainer.hpp"
#include "models/head_ops.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "models/param_count.hpp"
#include "sim/training/transfer_bytes.hpp"
#include "tests/exec_mpi/tiny_train_config.hpp"

namespace twinsim::exec {
namespace {

const char* group_name(CommGroup g) {
  switch (g) {
    case CommGroup::tp: return "tp";
    case CommGroup::cp: return "cp";
    case CommGroup::ep: return "ep";
    case CommGroup::etp: return "etp";
  }
  return "?";
}

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::ring_exchange: return "send";
    case CollectiveKind::none: break;
  }
  return "none";
}

// What this rank expects, keyed "op|group|collective" -> bytes over the step.
using Expected = std::map<std::string, std::size_t>;

std::string key(const std::string& op, std::string_view group, std::string_view collective) {
  return op + "|" + std::string(group) + "|" + std::string(collective);
}

// `recomputed`: the plan's full recompute runs these ops' forward collectives again before
// their backward (the step graph's "<layer>.tp.recompute" / cp / ep tasks, sim/training/step_graph.cpp).
void add_op_list(Expected& want, const std::vector<LayerOp>& ops, int layer, int micro_batches, bool recomputed = false) {
  for (const LayerOp& op : ops) {
    const auto add = [&](const Collective& c, op_names::OpPass pass) {
      if (c.kind == CollectiveKind::none || c.bytes == 0) return;
      want[key(op_names::op_name(layer, op.name, pass), group_name(c.group), collective_name(c.kind))] +=
          static_cast<std::size_t>(c.bytes) * micro_batches;
    };
    add(op.fwd_comm, op_names::OpPass::fwd);
    add(op.bwd_comm, op_names::OpPass::bwd_dgrad);
    add(op.bwd_regather, op_names::OpPass::bwd_dgrad);  // the same pass, another kind: its own key
    if (recomputed) add(op.fwd_comm, op_names::OpPass::recompute);
  }
}

// The op list's tp / cp / ep collectives for this rank's stage.
Expected op_list_collectives(const TrainConfig& c, const TransformerConfig& stage, int micro_batches) {
  const MicroBatchShape shape{c.training.micro_batch, c.training.seq_len, c.training.precision};
  Expected want;
  if (stage.first_layer == 0) add_op_list(want, build_embedding_ops(c.model, c.plan, shape), -1, micro_batches);
  for (int layer = stage.first_layer; layer < stage.end_layer; ++layer)
    add_op_list(want, build_layer_ops(c.model, layer, c.plan, shape), layer, micro_batches,
                c.plan.recompute == Recompute::full);
  if (stage.end_layer == c.model.layers) add_op_list(want, build_head_ops(c.model, c.plan, shape), -1, micro_batches);
  // the step's-end TP sum of the replicated, partially computed grads (the step graph's
  // dp.grad_reduce.tp task, sim/training/step_graph.cpp tp_grad_sum_s), once a step
  StagePieces pieces{0, 0, stage.first_layer == 0, stage.end_layer == c.model.layers};
  for (int layer = stage.first_layer; layer < stage.end_layer; ++layer)
    ++(c.model.is_moe_layer(layer) ? pieces.moe_layers : pieces.dense_layers);
  const std::int64_t summed = c.plan.tp > 1 ? tp_summed_grad_params(c.model, c.plan.sequence_parallel, pieces) : 0;
  // ZeRO-2 with overlap_grad_reduce (and ZeRO-3) reduce-scatter after every micro-batch,
  // summing the partial grads before each (check_zero12's count)
  const bool each_micro_batch = c.plan.dp > 1 && c.plan.shards_grads() && c.plan.overlap_grad_reduce;
  if (summed > 0)
    want[key(op_names::kDpGradReduce, "tp", "all_reduce")] = static_cast<std::size_t>(summed) *
                                                             grad_element_bytes(c.training.precision) *
                                                             (each_micro_batch ? micro_batches : 1);
  return want;
}

// The recorded collectives of the groups the op list prices, by the same key.
Expected recorded_model_collectives(const StepRecorder& recorder) {
  Expected got;
  for (const RecordedOp& op : recorder.ops())
    for (const RecordedCollective& col : op.collectives)
      if (col.group == "tp" || col.group == "cp" || col.group == "ep") got[key(op.name, col.group, col.collective)] += col.bytes;
  return got;
}

// The EP exchange: the op list prices an all-to-all of the whole routed buffer (tokens x top_k
// rows, times the imbalance); the executor's all-to-allv sends the counts (an all_to_all) and
// then only the rows bound for other ranks (send/recv), a routing-dependent share. So per EP
// op and pass: the executor exchanges where the op list does, and sends at most the buffer;
// the counts themselves (moe.counts, an all_to_all of one count per expert) match exactly.
bool ep_exchange_key(const std::string& k) {
  return k.find("|ep|send") != std::string::npos || k.find("|ep|recv") != std::string::npos ||
         k.find("|ep|all_to_all") != std::string::npos;
}
std::string op_of(const std::string& k) { return k.substr(0, k.find('|')); }

int compare_ep(const Expected& want, const Expected& got, int rank) {
  int bad = 0;
  for (const auto& [k, bytes] : want) {
    if (!ep_exchange_key(k)) continue;
    const std::string op = op_of(k);
    // the per-expert counts (moe.counts) go as one fixed-size all_to_all: exactly the op list's bytes
    if (got.count(key(op, "ep", "all_to_all"))) {
      const std::size_t whole = got.at(key(op, "ep", "all_to_all"));
      std::printf("rank %d ep: %s: simulator all_to_all %zu bytes; executor all_to_all %zu\n", rank, op.c_str(), bytes,
                  whole);
      if (whole != bytes) ++bad;
      continue;
    }
    const auto sent = got.count(key(op, "ep", "send")) ? got.at(key(op, "ep", "send")) : 0;
    const auto received = got.count(key(op, "ep", "recv")) ? got.at(key(op, "ep", "recv")) : 0;
    std::printf("rank %d ep: %s: simulator all_to_all %zu bytes; executor sent %zu, received %zu\n", rank, op.c_str(),
                bytes, sent, received);
    if (sent + received == 0 || sent > bytes) ++bad;
  }
  for (const auto& [k, bytes] : got)
    if (ep_exchange_key(k) && !want.count(key(op_of(k), "ep", "all_to_all")))
      std::printf("rank %d ep: %s: executor %zu bytes in an op the op list gives no exchange\n", rank, k.c_str(),
                  bytes), ++bad;
  return bad;
}

int compare(const char* what, const Expected& want, const Expected& got, int rank) {
  int bad = compare_ep(want, got, rank);
  for (const auto& [k, bytes] : want) {
    if (ep_exchange_key(k)) continue;
    const auto it = got.find(k);
    const std::size_t have = it == got.end() ? 0 : it->second;
    if (have != bytes) std::printf("rank %d %s: %s: simulator %zu bytes, executor %zu\n", rank, what, k.c_str(), bytes, have), ++bad;
  }
  for (const auto& [k, bytes] : got) {
    if (want.count(k) || ep_exchange_key(k)) continue;
    std::printf("rank %d %s: %s: executor %zu bytes, not in the op list\n", rank, what, k.c_str(), bytes), ++bad;
  }
  return bad;
}

std::size_t total_of(const StepRecorder& recorder, std::string_view group, std::string_view collective) {
  std::size_t total = 0;
  for (const RecordedOp& op : recorder.ops())
    for (const RecordedCollective& col : op.collectives)
      if (col.group == group && col.collective == collective) total += col.bytes;
  return total;
}

// The ZeRO collectives over the data-parallel ranks: Megatron's dp / dp_cp group, or hybrid
// sharding's shard group (exec/runtime/process_groups.cpp names it dp_shard).
std::size_t sharded_total(const StepRecorder& recorder, std::string_view collective) {
  return total_of(recorder, "dp", collective) + total_of(recorder, "dp_cp", collective) +
         total_of(recorder, "dp_shard", collective);
}

int check_dp(const TrainConfig& c, const StepRecorder& recorder, int rank) {
  if (c.plan.dp == 1 || c.plan.zero > 0 || c.plan.tp > 1 || c.plan.pp > 1 || c.model.moe) return 0;
  const std::size_t want = static_cast<std::size_t>(count_params(c.model).total) * grad_element_bytes(c.training.precision);
  const std::size_t got = recorder.bytes_of(op_names::kDpGradReduce, "dp_cp", "all_reduce") +
                          recorder.bytes_of(op_names::kDpGradReduce, "dp", "all_reduce");
  std::printf("rank %d dp: gradient all-reduce simulator %zu bytes, executor %zu\n", rank, want, got);
  return want == got ? 0 : 1;
}

// ZeRO-3 (dense, tp = pp = 1): every parameter gathered over dp in each micro-batch's forward
// and again in its backward, param_element_bytes an element (the step graph's zero3 gathers);
// every gradient reduce-scattered, grad_element_bytes an element, per micro-batch as the step
// graph's per-layer reduces (zero_layer_reduce_s: one micro-batch).
int check_zero3(const TrainConfig& c, const StepRecorder& recorder, int micro_batches, int rank) {
  if (c.plan.zero != 3 || c.plan.tp > 1 || c.plan.pp > 1 || c.model.moe) return 0;
  const auto params = static_cast<std::size_t>(count_params(c.model).total);
  const std::size_t want_gather = params * param_element_bytes(c.training.precision) * 2 * micro_batches;
  const std::size_t want_reduce = params * grad_element_bytes(c.training.precision) * micro_batches;
  const std::size_t gather = sharded_total(recorder, "all_gather");
  const std::size_t reduce = sharded_total(recorder, "reduce_scatter");
  std::printf("rank %d zero3: parameter all-gathers simulator %zu bytes, executor %zu; gradient reduce-scatters "
              "simulator %zu, executor %zu\n", rank, want_gather, gather, want_reduce, reduce);
  return (gather == want_gather ? 0 : 1) + (reduce == want_reduce ? 0 : 1);
}

// ZeRO-1/2 (dense, dp > 1, tp = pp = 1): the gradients reduce-scattered, grad_element_bytes
// an element, once a step (ZeRO-1) or, ZeRO-2 with overlap_grad_reduce, after every micro-
// batch's backward (the step graph's shard_reduce, §5.2); the updated parameters all-gathered
// once, param_element_bytes an element (the step graph's gathers after the optimizer).
int check_zero12(const TrainConfig& c, const StepRecorder& recorder, int micro_batches, int rank) {
  if ((c.plan.zero != 1 && c.plan.zero != 2) || c.plan.tp > 1 || c.plan.pp > 1 || c.model.moe) return 0;
  const auto params = static_cast<std::size_t>(count_params(c.model).total);
  const int reduces = c.plan.shards_grads() && c.plan.overlap_grad_reduce ? micro_batches : 1;
  const std::size_t want_reduce = params * grad_element_bytes(c.training.precision) * reduces;
  const std::size_t want_gather = params * param_element_bytes(c.training.precision);
  const std::size_t reduce = sharded_total(recorder, "reduce_scatter");
  const std::size_t gather = sharded_total(recorder, "all_gather");
  const std::size_t all_reduce = sharded_total(recorder, "all_reduce");
  std::printf("rank %d zero%d: gradient reduce-scatters simulator %zu bytes, executor %zu; parameter all-gathers "
              "simulator %zu, executor %zu; all-reduces executor %zu\n", rank, c.plan.zero, want_reduce, reduce,
              want_gather, gather, all_reduce);
  return (reduce == want_reduce ? 0 : 1) + (gather == want_gather ? 0 : 1) + (all_reduce == 0 ? 0 : 1);
}

// Hybrid sharding (plan.dp_replicate R > 1, ZeRO 1-3, dense, tp = pp = 1): after each
// reduce-scatter inside the shard group, the rank's shard (params / (dp / R) elements,
// grad_element_bytes each) is all-reduced over its R replicas, as often as the reduce-scatter
// (the simulator's replicate_all_reduce_s, sim/training/zero_comm.cpp, prices the same bytes).
// By hand for the tiny GPT (tiny_train_config.hpp: hidden 32, ffn 64, 4 layers, vocab 64,
// 32 positions, tied head): a layer 2*32 + (32*96+96) + (32*32+32) + 2*32 + (32*64+64) +
// (64*32+32) = 8,544, so 4*8,544 + 64*32 + 32*32 + 2*32 = 37,312 parameters, 149,248 fp32 bytes.
// dp 4 = 2 replicas x shard 2, global batch 4, micro-batch 1: one micro-batch a rank, so a rank
//   ZeRO-3: gathers 2 x 149,248 = 298,496 B and reduce-scatters 149,248 B in the shard group,
//           and all-reduces 37,312 / 2 * 4 = 74,624 B over the replicas;
//   ZeRO-1: reduce-scatters 149,248 B and gathers 149,248 B in the shard group once, and
//           all-reduces 74,624 B over the replicas once; no all-reduce inside the shard group.
// With global batch 8 (two micro-batches) ZeRO-3's three figures double.
int check_replicas(const TrainConfig& c, const StepRecorder& recorder, int micro_batches, int rank) {
  if (c.plan.zero == 0 || c.plan.tp > 1 || c.plan.pp > 1 || c.model.moe) return 0;
  const std::size_t got = total_of(recorder, "dp_replicate", "all_reduce");
  std::size_t want = 0;
  if (c.plan.dp_replicate > 1) {
    const auto shard = static_cast<std::size_t>(count_params(c.model).total / (c.plan.dp / c.plan.dp_replicate));
    const int reduces = c.plan.shards_grads() && c.plan.overlap_grad_reduce ? micro_batches : 1;
    want = shard * grad_element_bytes(c.training.precision) * reduces;
  }
  std::printf("rank %d replicas: shard all-reduce simulator %zu bytes, executor %zu\n", rank, want, got);
  return want == got ? 0 : 1;
}

int check_pp(const TrainConfig& c, const ProcessGroups& groups, const StepRecorder& recorder, int micro_batches,
             int rank) {
  if (c.plan.pp == 1) return 0;
  const double per_transfer = pipeline_transfer_bytes(c.model, c.plan, c.training.micro_batch, c.training.seq_len,
                                                      c.training.precision);
  const int boundaries = (groups.is_first_stage() ? 0 : 1) + (groups.is_last_stage() ? 0 : 1);
  const auto want = static_cast<std::size_t>(per_transfer) * micro_batches * boundaries;
  const std::size_t got = total_of(recorder, "pp", "send");
  std::printf("rank %d pp: sends simulator %zu bytes, executor %zu\n", rank, want, got);
  return want == got ? 0 : 1;
}

int run(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    args[a.substr(0, eq)] = a.substr(eq + 1);
  }
  auto world = MpiCommunicator::world();
  const TrainConfig config = tiny_config(args);
  const std::unique_ptr<Communicator> device_comm = current_backend().device_communicator(*world);  // as run_job
  ProcessGroups groups(device_comm ? *device_comm : *world, config.plan);
  StepRecorder recorder(current_backend().kernels());
  groups.record_collectives(recorder);
  Profiler profiler(world->rank());  // names the ops
  const std::unique_ptr<TokenSource> data = training_tokens(config.training.data, static_cast<int>(config.model.vocab), config.seed);
  Trainer trainer(config, groups, *data, &profiler);
  trainer.step();
  const int micro_batches = static_cast<int>(config.training.global_batch / (config.training.micro_batch * config.plan.dp));
  const int rank = world->rank();
  // the comparison must be able to fail: sim_sp=0 prices the plan without sequence parallelism
  TrainConfig priced = config;
  if (args.count("sim_sp")) priced.plan.sequence_parallel = args["sim_sp"] == "1";
  // ... and sim_replicate=1 prices a hybrid-sharded run as one fully sharded group
  if (args.count("sim_replicate")) priced.plan.dp_replicate = std::stoi(args["sim_replicate"]);
  int bad = compare("op list", op_list_collectives(priced, trainer.stage().config(), micro_batches),
                    recorded_model_collectives(recorder), rank);
  bad += check_dp(config, recorder, rank);
  bad += check_pp(config, groups, recorder, micro_batches, rank);
  bad += check_zero3(config, recorder, micro_batches, rank);
  bad += check_zero12(config, recorder, micro_batches, rank);
  bad += check_replicas(priced, recorder, micro_batches, rank);
  for (const std::string& c : recorder.unattributed_collectives())
    std::printf("rank %d: collective outside every op: %s\n", rank, c.c_str());
  float found = static_cast<float>(bad);
  world->all_reduce(&found, 1, ReduceOp::max);
  if (rank == 0) std::printf("recorded collectives %s\n", found == 0 ? "match the simulator's" : "DIFFER");
  return found == 0 ? 0 : 1;
}

}  // namespace
}  // namespace twinsim::exec

int main(int argc, char** argv) {
  twinsim::exec::MpiSession session(&argc, &argv);
  try {
    return twinsim::exec::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "record_mpi: %s\n", e.what());
    return 2;
  }
}
