// The catalog's H200 against two training steps profiled on a real H200
// (scenarios/validation/microbench/measured_2026-11-26/h200/train_step_kernels_*.csv:
// torch.profiler's kernels of two steps of Hugging Face's LlamaForCausalLM, bf16 autocast,
// fused AdamW). The step as a whole runs Hugging Face's eager element-wise kernels, which
// the op list does not model; its GEMMs and its optimizer are the op list's own, so their
// device time is what the catalog must predict, and its attention cuDNN's kernel, which
// `stack: {attention_kernel: cudnn}` prices. Nothing here was fitted to these steps.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

struct ProfiledStep {
  double gemm_s = 0, optimizer_s = 0, attention_s = 0;  // device time per step
};

// cuBLAS's Hopper GEMM kernels are named nvjet_sm90_*; PyTorch's fused AdamW runs as
// multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata...>; SDPA chose cuDNN's
// attention (cudnn_generated_fort_native_sdpa_sm90_flash_{fprop,bprop}_*).
ProfiledStep read_profile(const std::string& file) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/measured_2026-11-26/h200/" + file);
  EXPECT_TRUE(in) << file;
  std::string line;
  std::getline(in, line);  // case,two_steps_us,kernel,calls,device_us
  ProfiledStep step;
  while (std::getline(in, line)) {
    // a kernel's name may hold commas (quoted): it is what lies between the 2nd and the 2nd-last comma
    const std::size_t name_begin = line.find(',', line.find(',') + 1) + 1;
    const std::size_t us_begin = line.rfind(',') + 1;
    const std::size_t name_end = line.rfind(',', us_begin - 2);
    const std::string kernel = line.substr(name_begin, name_end - name_begin);
    const double s = std::stod(line.substr(us_begin)) * 1e-6 / 2;  // two steps profiled
    if (kernel.rfind("nvjet_sm90", 0) == 0) step.gemm_s += s;
    if (kernel.find("FusedOptimizerTensorListMetadata") != std::string::npos) step.optimizer_s += s;
    if (kernel.find("native_sdpa_sm90_flash") != std::string::npos) step.attention_s += s;
  }
  return step;
}

ProfiledStep simulated(const std::string& scenario, const std::vector<std::string>& overrides) {
  const std::set<std::string> gemms = {op_names::kAttnQkv, op_names::kAttnProj, op_names::kMlpGateUp,
                                       op_names::kMlpDown, op_names::kHeadLogits};
  const nlohmann::json time = time_json(predict_training(load_scenario_text(scenario, overrides)));
  ProfiledStep step;
  for (const auto& op : time["ops"]) {
    const std::string name = op["name"];
    const std::string base = name.substr(0, name.rfind('.'));  // "mlp.down.bwd_wgrad" -> "mlp.down"
    const double s = op["time_s"].get<double>() * op["count"].get<double>();
    if (gemms.count(base)) step.gemm_s += s;
    if (base == op_names::kAttnCore) step.attention_s += s;
  }
  step.optimizer_s = time["breakdown"]["optimizer_s"].get<double>();
  return step;
}

const char* const kOneH200 = "cluster: dgx-h200\nplan: {tp: 1, pp: 1, dp: 1}\n";

TEST(MeasuredH200Step, Llama32_1BGemmsAndOptimizer) {
  const ProfiledStep real = read_profile("train_step_kernels_llama3.2-1b.csv");
  const ProfiledStep sim = simulated(std::string(kOneH200) + "model: llama3.2-1b\n"
                                     "training: {seq_len: 2048, global_batch: 4, micro_batch: 4, precision: bf16}\n", {});
  ASSERT_GT(real.gemm_s, 0.05);  // 77 ms measured
  EXPECT_NEAR(sim.gemm_s / real.gemm_s, 1.0, 0.10);
  EXPECT_NEAR(sim.optimizer_s / real.optimizer_s, 1.0, 0.10);
  // the attention ran cuDNN's kernel: the stack that runs it is priced with its curves
  const ProfiledStep cudnn = simulated(std::string(kOneH200) + "model: llama3.2-1b\nstack: {attention_kernel: cudnn}\n"
                                       "training: {seq_len: 2048, global_batch: 4, micro_batch: 4, precision: bf16}\n", {});
  ASSERT_GT(real.attention_s, 0.005);  // 11.5 ms measured
  EXPECT_NEAR(cudnn.attention_s / real.attention_s, 1.0, 0.15);
  EXPECT_GT(sim.attention_s / real.attention_s, 1.25);  // FlashAttention-2's curves
}

TEST(MeasuredH200Step, Llama3_8BShapesWithEightLayers) {
  const ProfiledStep real = read_profile("train_step_kernels_llama3-8b-8layers.csv");
  const ProfiledStep sim = simulated(std::string(kOneH200) + "model: llama3-8b\n"
                                     "training: {seq_len: 4096, global_batch: 2, micro_batch: 2, precision: bf16}\n",
                                     {"model.layers=8"});
  ASSERT_GT(real.gemm_s, 0.10);  // 151 ms measured
  EXPECT_NEAR(sim.gemm_s / real.gemm_s, 1.0, 0.10);
  EXPECT_NEAR(sim.optimizer_s / real.optimizer_s, 1.0, 0.10);
  const ProfiledStep cudnn = simulated(std::string(kOneH200) + "model: llama3-8b\nstack: {attention_kernel: cudnn}\n"
                                       "training: {seq_len: 4096, global_batch: 2, micro_batch: 2, precision: bf16}\n",
                                       {"model.layers=8"});
  EXPECT_NEAR(cudnn.attention_s / real.attention_s, 1.0, 0.15);
}

}  // namespace
}  // namespace twinsim
