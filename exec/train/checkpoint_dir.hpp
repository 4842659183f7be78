#pragma once
// A job's checkpoints in one folder, one safetensors file per rank and step:
//   DIR/step-<K>/rank-<R>.safetensors   this rank's state after K steps (atomic per file)
//   DIR/latest                          "K": the newest step whose files ALL ranks finished
// `latest` is replaced (temp file + rename) only after a barrier that every rank reaches
// once its own file is renamed into place, and older steps are deleted only after that:
// a job killed at any moment leaves `latest` naming a complete, loadable checkpoint.
#include <string>

#include "exec/runtime/communicator.hpp"
#include "exec/train/trainer.hpp"

namespace twinsim::exec {

class CheckpointDir {
 public:
  // `keep`: how many of the newest complete steps stay on disk (at least 1); step 0, the
  // initial weights a run saves on request, always stays.
  explicit CheckpointDir(std::string dir, int keep = 1) : dir_(std::move(dir)), keep_(keep < 1 ? 1 : keep) {}

  // Collective over `world`: every rank writes its file, then rank 0 moves `latest` and
  // deletes the steps older than the newest `keep`.
  void save(Trainer& trainer, Communicator& world) const;
  // Loads this rank's file of the step `latest` names; throws CheckpointError when there is
  // none, and CheckpointCorrupted (naming the file) when its checksum does not match.
  // Returns the step resumed from.
  int resume(Trainer& trainer, int world_rank) const;

  std::string rank_file(int step, int rank) const;
  // The step `latest` names; throws CheckpointError when there is none or it is damaged.
  int latest_step() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int keep_ = 1;
};

}  // namespace twinsim::exec
