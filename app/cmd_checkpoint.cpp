// `twinsim checkpoint merge SCENARIO --checkpoint-dir DIR --out FILE [--step K]
//  [--names twinsim|huggingface] [--optimizer] [--set K=V]...`: the whole model from the
// per-rank files `twinsim run --checkpoint-dir` wrote (exec/train/checkpoint_merge.hpp).
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "app/executor_commands.hpp"
#include "app/scenario_args.hpp"
#include "exec/train/checkpoint_merge.hpp"
#include "exec/train/hf_names.hpp"
#include "io/whole_file.hpp"
#include "scenario/errors.hpp"

namespace twinsim {

namespace {

struct MergeArgs {
  ScenarioArgs scenario;
  std::string dir, out, names = "twinsim";
  std::string hf_config;  // with --names huggingface: write transformers' config.json here
  int step = -1;  // -1: the step `latest` names
  bool optimizer = false;
};

void run_merge(const MergeArgs& a) {
  const Scenario s = load_from_args(a.scenario);
  if (!a.hf_config.empty() && a.names != "huggingface")
    throw ScenarioError("--hf-config", a.hf_config, "goes with --names huggingface (the config names transformers' keys)");
  io::check_writable(a.out);  // before reading every rank's file, not after
  if (!a.hf_config.empty()) io::check_writable(a.hf_config);
  if (!s.training) throw ScenarioError("training", "", "merges a training run's checkpoint: the scenario has no training section");
  exec::TrainConfig c;
  c.model = s.model;
  c.plan = s.plan;
  c.training = *s.training;
  const exec::CheckpointDir dir(a.dir);
  const int step = a.step >= 0 ? a.step : dir.latest_step();
  exec::MergeOptions o;
  o.names = a.names == "huggingface" ? exec::MergedNames::huggingface : exec::MergedNames::twinsim;
  o.optimizer = a.optimizer;
  const exec::TensorFile merged = exec::merge_checkpoint(c, dir, step, o);
  exec::save_safetensors(a.out, merged);
  if (!a.hf_config.empty())
    io::write_file_whole(a.hf_config, exec::hf_config(c.model, c.training.precision).dump(2) + "\n");
  if (a.scenario.json) {
    const nlohmann::json j{{"out", a.out}, {"step", step}, {"names", a.names}, {"tensors", merged.tensors().size()},
                           {"optimizer", a.optimizer}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "wrote " << a.out << ": " << merged.tensors().size() << " tensors, step " << step << ", "
            << a.names << " names\n";
}

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  CLI::App* checkpoint = app.add_subcommand(kCheckpointCommand.name, kCheckpointCommand.summary);
  checkpoint->require_subcommand(1);
  auto a = std::make_shared<MergeArgs>();
  CLI::App* merge = checkpoint->add_subcommand(
      "merge", "join a run's per-rank checkpoint files into one safetensors file, a tensor per parameter");
  add_scenario_args(*merge, a->scenario);
  merge->add_option("--checkpoint-dir", a->dir, "the run's --checkpoint-dir")->required();
  merge->add_option("--out", a->out, "the merged safetensors file to write")->required();
  merge->add_option("--step", a->step, "the step to merge (default: the newest complete one)")
      ->check(cli::whole(0, 1 << 30));
  merge->add_option("--names", a->names, "twinsim (the executor's names) or huggingface (GPT-2 / Llama keys)")
      ->check(CLI::IsMember({"twinsim", "huggingface"}));
  merge->add_option("--hf-config", a->hf_config,
                    "with --names huggingface: also write transformers' config.json (GPT2Config / LlamaConfig) here");
  merge->add_flag("--optimizer", a->optimizer, "also the fp32 masters and the optimizer's moments, per parameter");
  merge->callback([a] { run_merge(*a); });
}

}  // namespace twinsim
