#include "exec/train/checkpoint_merge.hpp"

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "exec/model/transformer.hpp"
#include "exec/runtime/process_groups.hpp"
#include "exec/runtime/storage_dtype.hpp"
#include "exec/train/hf_names.hpp"
#include "exec/train/trainer.hpp"
#include "exec/train/zero.hpp"

namespace twinsim::exec {

namespace {

// A stored tensor's values as floats (F32 as is, BF16 / F16 widened: exact).
std::vector<float> values_of(const StoredTensor& t) {
  return with_storage(t.dtype, [&]<class T>() {
    const std::size_t n = t.data.size() / sizeof(T);
    std::vector<T> raw(n);
    std::memcpy(raw.data(), t.data.data(), t.data.size());
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = kernels::to_float(raw[i]);
    return out;
  });
}

// The run's files, loaded once each, by world rank, each checked to belong to this job.
class RankFiles {
 public:
  RankFiles(const TrainConfig& c, const CheckpointDir& dir, int step)
      : signature_(job_signature(c)), world_(ParallelDims::from_plan(c.plan).world_size()), dir_(dir), step_(step) {}
  const TensorFile& at(int rank) {
    auto it = files_.find(rank);
    if (it != files_.end()) return it->second;
    TensorFile file = load_safetensors(path(rank));
    const auto meta = [&](const std::string& key) {
      const auto m = file.metadata().find(key);
      return m == file.metadata().end() ? std::string("(none)") : m->second;
    };
    for (const auto& [key, mine] : signature_)
      if (meta(key) != mine)
        throw CheckpointError(path(rank) + ": " + key + " is '" + meta(key) + "' but the scenario has '" + mine +
                              "': merge it with the scenario (and --set) the run used");
    if (meta("twinsim.world_rank") != std::to_string(rank) || meta("twinsim.world_size") != std::to_string(world_))
      throw CheckpointError(path(rank) + ": written by rank " + meta("twinsim.world_rank") + " of " +
                            meta("twinsim.world_size") + ", expected rank " + std::to_string(rank) + " of " +
                            std::to_string(world_));
    return files_.emplace(rank, std::move(file)).first->second;
  }
  std::string path(int rank) const { return dir_.rank_file(step_, rank); }

 private:
  std::map<std::string, std::string> signature_;
  int world_;
  const CheckpointDir& dir_;
  int step_;
  std::map<int, TensorFile> files_;
};

// One parameter's full matrix being filled from its TP shards.
struct FullParam {
  ParamSpec spec;
  std::vector<float> values;
};

class Merger {
 public:
  // Reads and checks every rank's file, those the merge needs no values from (DP replicas)
  // too, so a merge also says whether the checkpoint is whole.
  Merger(const TrainConfig& c, const CheckpointDir& dir, int step) : c_(c), files_(c, dir, step) {
    for (int r = 0; r < ParallelDims::from_plan(c.plan).world_size(); ++r) files_.at(r);
  }

  // One stored state (".params", ".master", ".adam_m", ".adam_v") of every parameter of
  // every stage, by twinsim name.
  std::map<std::string, FullParam> merge(const std::string& suffix) {
    std::map<std::string, FullParam> out;
    first_stage_.clear();
    // under expert parallelism the first ep DP replicas hold every expert between them
    // (data-parallel rank e is expert-parallel rank e: process_groups.hpp); their other
    // parameters repeat each other's
    for (int stage = 0; stage < c_.plan.pp; ++stage)
      for (int t = 0; t < c_.plan.tp; ++t)
        for (int e = 0; e < c_.plan.ep; ++e) {
          RankCoords coords;
          coords.tp = t, coords.pp = stage, coords.ep = e;
          for (const BlockSpecs& block : stage_block_specs(stage_config(c_, coords)))
            add_block(out, block, stage, t, e, suffix);
        }
    return out;
  }

 private:
  int rank(int stage, int t, int d) const { return global_rank(ParallelDims::from_plan(c_.plan), t, 0, d, stage); }

  // The block's flat buffer of one state (`suffix`) on TP rank t, as the run laid it out
  // (flat_layout): the parameters as one tensor unless ZeRO-3 sharded them; otherwise each
  // segment's tensor (the expert segment's named ".experts", zero.cpp), its shares joined
  // over the segment's group when the run sharded that state (ZeRO-3 parameters; ZeRO 1-3
  // optimizer states): the DP ranks, or for the experts the expert-DP group of `e`.
  // `e`: the expert-parallel rank whose experts the block holds (0 without expert parallelism).
  std::vector<float> flat(const BlockSpecs& block, const FlatLayout& layout, int stage, int t, int e,
                          const std::string& suffix) {
    const bool sharded = suffix == ".params" ? c_.plan.shards_params() : c_.plan.shards_optimizer();
    if (suffix == ".params" && !sharded) return stored(rank(stage, t, e), block.name + suffix);
    std::vector<float> all;
    // DP rank d holds expert-parallel rank d % ep's experts (process_groups.hpp), its
    // expert-DP rank d / ep
    const auto join = [&](const std::string& name, int first, int step) {
      // hybrid sharding: replica 0's shard group, dp ranks [0, shard size) (models/hybrid_shard_layout.hpp)
      for (int d = first; d < (sharded ? dense_pad_multiple(c_.plan) : first + 1); d += step) {
        const std::vector<float> part = stored(rank(stage, t, d), name);
        all.insert(all.end(), part.begin(), part.end());
      }
    };
    join(block.name + suffix, sharded ? 0 : e, 1);
    if (layout.experts_begin < layout.flat) join(block.name + ".experts" + suffix, e, c_.plan.ep);
    return all;
  }

  std::vector<float> stored(int r, const std::string& name) {
    const TensorFile& file = files_.at(r);
    if (!file.contains(name))
      throw CheckpointError(files_.path(r) + ": has no tensor " + name + ": was it written by another plan or model?");
    return values_of(file.at(name));
  }

  void add_block(std::map<std::string, FullParam>& out, const BlockSpecs& block, int stage, int t, int e,
                 const std::string& suffix) {
    const FlatLayout layout =
        flat_layout(block.specs, c_.plan.tp, dense_pad_multiple(c_.plan), expert_pad_multiple(c_.plan));
    const std::vector<float> values = flat(block, layout, stage, t, e, suffix);
    if (values.size() != layout.flat)
      throw CheckpointError(files_.path(rank(stage, t, e)) + ": " + block.name + suffix + " holds " +
                            std::to_string(values.size()) + " values in all, the plan lays out " +
                            std::to_string(layout.flat) + ": was it written by another plan or model?");
    for (std::size_t i = 0; i < block.specs.size(); ++i) {
      const ParamSpec& s = block.specs[i];
      // the last stage's copy of a tied embedding repeats stage 0's: stage 0's stays
      const auto [it, added] = first_stage_.emplace(s.name, stage);
      if (added) out[s.name] = FullParam{s, std::vector<float>(static_cast<std::size_t>(s.rows * s.cols))};
      if (it->second == stage) put_shard(values.data() + layout.offsets[i], s, c_.plan.tp, t, out[s.name].values);
    }
  }

  const TrainConfig& c_;
  RankFiles files_;
  std::map<std::string, int> first_stage_;  // per merged name: the stage whose copy is kept
};

void store(TensorFile& file, const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& v,
           Dtype dtype) {
  if (dtype == Dtype::fp32) return file.add_f32(name, std::move(shape), v.data());
  with_storage(dtype, [&]<class T>() {
    if constexpr (!std::is_same_v<T, float>) {
      std::vector<std::uint16_t> bits(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) bits[i] = kernels::from_float<T>(v[i]).bits;
      file.add_u16(name, dtype, std::move(shape), bits.data());
    }
  });
}

// Every tensor of `merged` (one state of every parameter) into `out` under the chosen
// names plus `suffix` (none for the parameters), as `dtype`.
void store_all(TensorFile& out, const ModelSpec& model, std::map<std::string, FullParam> merged, MergedNames names,
               const std::string& suffix, Dtype dtype) {
  std::map<std::string, std::pair<ParamSpec, std::vector<float>>> by_name;
  for (auto& [name, p] : merged) by_name[name] = {p.spec, std::move(p.values)};
  if (names == MergedNames::huggingface) {
    for (HfTensor& t : to_hf_names(model, by_name)) store(out, t.name + suffix, std::move(t.shape), t.values, dtype);
  } else {
    for (const auto& [name, p] : by_name) store(out, name + suffix, full_shape(p.first), p.second, dtype);
  }
}

}  // namespace

TensorFile merge_checkpoint(const TrainConfig& config, const CheckpointDir& dir, int step, const MergeOptions& options) {
  validate(config);
  // the merge reads expert ranks off the data-parallel ranks (Merger::merge)
  if (config.plan.etp() != config.plan.tp)
    throw std::invalid_argument("plan.expert_tp=" + std::to_string(config.plan.expert_tp) +
                                ": the checkpoint merge reads experts split over plan.tp=" +
                                std::to_string(config.plan.tp) + " (resume from the ranks' files instead)");
  Merger merger(config, dir, step);
  TensorFile out;
  store_all(out, config.model, merger.merge(".params"), options.names, "", config.training.precision);
  if (options.optimizer) {
    const bool adam = config.training.optimizer == Optimizer::adam;
    // PyTorch's names for the states (torch.optim.Adam's exp_avg / exp_avg_sq, SGD's
    // momentum_buffer), so a user's script finds them where it looks
    std::vector<std::pair<std::string, std::string>> states{{".adam_m", adam ? ".exp_avg" : ".momentum_buffer"}};
    if (adam) states.emplace_back(".adam_v", ".exp_avg_sq");
    if (config.training.precision != Dtype::fp32) states.emplace_back(".master", ".master");
    for (const auto& [stored, named] : states)
      store_all(out, config.model, merger.merge(stored), options.names, named, Dtype::fp32);
  }
  out.metadata()["twinsim.steps_done"] = std::to_string(step);
  out.metadata()["twinsim.names"] = options.names == MergedNames::huggingface ? "huggingface" : "twinsim";
  out.metadata()["format"] = "pt";  // transformers' save_pretrained writes it; from_pretrained expects it
  return out;
}

}  // namespace twinsim::exec
