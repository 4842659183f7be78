// Sliding-window attention at gpt-oss's shape (head width 64, 64 query heads over 8 KV heads)
// against cuDNN's own published training benchmark of it (NVIDIA/cudnn-frontend
// benchmark/sdpa_benchmark_training, config gpt_oss; scenarios/validation/microbench/
// attention_cudnn_gpt_oss_swa_h200_gb200_cudnn_frontend.csv): the layer's `attn.core` op as a
// training step prices it (models/layer_ops.cpp's window span, sim/training/layer_costs.cpp,
// the GPU's cuDNN curves). Nothing was fitted to the H200 rows: its cuDNN curve comes from
// full causal attention measured in this repo (measured_2026-11-26/h200/attention.csv), so
// every H200 windowed row is held out. Issue 53 asked whether gpt-oss's window is priced as its
// tiles: at a 1,024-token window it is, within 10% forward and backward.
// The same benchmark's Blackwell rows (GB200, GB300: gpt-oss's windows and Llama 3.1's full
// causal attention, attention_cudnn_blackwell_gb200_gb300_cudnn_frontend.csv) judge the cuDNN
// curves fitted to part of them (scripts/cudnn_frontend_attention_to_catalog.py), on the rest.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

struct PublishedRow {
  std::string gpu;
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0, window = 0;
  bool backward = false;
  double time_s = 0;
};

const char* const kGptOssRows = "attention_cudnn_gpt_oss_swa_h200_gb200_cudnn_frontend.csv";
const char* const kBlackwellRows = "attention_cudnn_blackwell_gb200_gb300_cudnn_frontend.csv";

// The causal (top_left) rows of one of the benchmark's copies in scenarios/validation/microbench/.
std::vector<PublishedRow> published_rows(const std::string& file = kGptOssRows) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file);
  EXPECT_TRUE(in) << file;
  std::vector<PublishedRow> rows;
  std::string line;
  // gpu,cudnn_backend_version,dtype,attn_mask,batch,seqlen,num_q_heads,num_kv_heads,head_dim,
  // sliding_window,pass,time_ms,tflops
  std::getline(in, line);
  while (std::getline(in, line)) {
    const std::vector<std::string> c = split_csv_line(line);
    if (c.size() != 13 || c[3] != "top_left") continue;
    rows.push_back({c[0], std::stoi(c[4]), std::stoi(c[5]), std::stoi(c[6]), std::stoi(c[7]), std::stoi(c[8]),
                    std::stoi(c[9]), c[10] == "bwd", std::stod(c[11]) / 1e3});
  }
  return rows;
}

// The cluster of the row's GPU, one node: the H200 in a DGX (8 GPUs), as the catalog has it; the
// GB200 and GB300 (72 GPUs) with the cuDNN curves fitted to this benchmark
// (scripts/cudnn_frontend_attention_to_catalog.py, attention_cudnn_gb{2,3}00_curves.yaml) as an
// overlay of cluster.gpu: they are not in the catalog (the report of issue 53 says why).
// `catalog`: the GPU as the catalog has it (TE's attention on a GPU without cuDNN curves).
std::string cluster_yaml(const std::string& gpu, bool catalog = false) {
  if (gpu == "H200") return "cluster: {preset: dgx-h200, nodes: 1}\n";
  const std::string name = gpu == "GB200" ? "gb200" : "gb300";
  if (catalog) return "cluster: {preset: " + name + "-nvl72, nodes: 1}\n";
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/attention_cudnn_" + name +
                   "_curves.yaml");
  EXPECT_TRUE(in) << name;
  std::string text = "cluster:\n  preset: " + name + "-nvl72\n  nodes: 1\n  gpu:\n    preset: " + name +
                     "\n    attention_kernel_efficiency_by_seq:\n";
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') text += "      " + line + "\n";
  return text;
}

// One attention-only layer of the benchmark's shape, every layer windowed, under the
// megatron-core stack (Transformer Engine: cuDNN's fused attention where the GPU has its curves).
Scenario benchmark_scenario(const PublishedRow& r, int gpus, bool catalog = false) {
  const std::string model = "model: {layers: 1, hidden: 2880, heads: " + std::to_string(r.heads) +
                            ", kv_heads: " + std::to_string(r.kv_heads) + ", head_dim: " + std::to_string(r.head_dim) +
                            ", ffn_hidden: 2880, activation: swiglu, norm: rmsnorm, vocab: 32000, position: rope, "
                            "max_seq_len: 32768, tied_embeddings: false, bias: false, dropout: 0, sliding_window: " +
                            std::to_string(r.window) + "}\n";
  return load_scenario_text(
      model + cluster_yaml(r.gpu, catalog) + "training: {seq_len: " + std::to_string(r.seq) +
      ", global_batch: " + std::to_string(gpus * r.batch) + ", micro_batch: " + std::to_string(r.batch) +
      ", precision: bf16}\nplan: {tp: 1, pp: 1, dp: " + std::to_string(gpus) + "}\nstack: megatron-core\n");
}

const OpTime& core_attention(const LayerCost& layer) {
  for (const OpTime& op : layer.ops)
    if (op.name == "attn.core") return op;
  throw std::runtime_error("no attn.core op");
}

// The window's FLOPs as the op list counts them (worked by hand): at 4,096 tokens and a
// 1,024-token window the sequence's queries see 1,024*1,025/2 + 3,072*1,024 = 3,670,528 pairs
// against 4,096*4,097/2 = 8,390,656, so the layer is priced as 4,096 * 3,670,528 / 8,390,656
// = 1,791.8 -> 1,792 keys of the full rectangle: 2 * (2 x 4,096 tokens) * 1,792 keys *
// (64 x 64 Q + 64 x 64 O columns) = 240,518,168,576 FLOPs forward, twice that backward.
// The benchmark counts the same pairs once (b h pairs 2 (d + d) = 120,275,861,504): the
// catalog's curves are rates against the full rectangle, twice the useful causal FLOPs
// (1.9997 x here: the span is rounded to whole keys).
TEST(WindowedAttention, TheWindowIsPricedAtItsCausalPairs) {
  const PublishedRow r{"H200", 2, 4096, 64, 8, 64, 1024, false, 0};
  const OpTime& op = core_attention(cost_layer(benchmark_scenario(r, 8), 0));
  EXPECT_DOUBLE_EQ(op.fwd_flops, 240518168576.0);
  EXPECT_DOUBLE_EQ(op.bwd_flops, 2 * 240518168576.0);
}

// The op's forward or backward time on the row's GPU, in the benchmark's shape.
double predicted_s(const PublishedRow& r, bool catalog = false) {
  const OpTime& op = core_attention(cost_layer(benchmark_scenario(r, r.gpu == "H200" ? 8 : 72, catalog), 0));
  return r.backward ? op.dgrad_s : op.fwd_s;
}

double print_error(const PublishedRow& r, const char* role) {
  const double predicted = predicted_s(r);
  const double error = predicted / r.time_s - 1;
  std::printf("%-5s %dx%d heads hd%d window %4d seq %5d %s: predicted %.3f ms, published %.3f ms (%+.1f%%) %s",
              r.gpu.c_str(), r.heads, r.kv_heads, r.head_dim, r.window, r.seq, r.backward ? "bwd" : "fwd",
              1e3 * predicted, 1e3 * r.time_s, 100 * error, role);
  if (r.gpu != "H200") std::printf("; catalog today %+.1f%%", 100 * (predicted_s(r, true) / r.time_s - 1));
  std::printf("\n");
  return error;
}

// Held out, H200 (cuDNN 9.19.1, the benchmark's published rows, 2k to 32k tokens): the
// simulator's windowed attention within 10% of each forward and backward (today -4% to +1%).
// GB200 and GB300 (cuDNN 9.22, a 128-token window over 128 heads): the fitted Blackwell cuDNN
// curves (cluster_yaml) take their 256-key point from the 4k and 16k rows; 2k and 8k are held
// out within 10%. The 32k rows are printed, not judged: there the benchmark's forward takes
// 3.2x (GB200) its 16k time for twice the work, a step no other row of the sweep shows.
TEST(WindowedAttention, CudnnGptOssShapeHeldOut) {
  int judged = 0;
  std::vector<PublishedRow> rows = published_rows();
  for (const PublishedRow& r : published_rows(kBlackwellRows))
    if (r.window > 0) rows.push_back(r);
  for (const PublishedRow& r : rows) {
    const bool fit = r.gpu != "H200" && (r.seq == 4096 || r.seq == 16384);
    const bool judge = r.gpu == "H200" || (!fit && r.seq != 32768);
    const double error = print_error(r, fit ? "(fit)" : judge ? "" : "(not judged)");
    if (!judge) continue;
    EXPECT_LT(std::abs(error), 0.10) << r.gpu << " " << r.seq << (r.backward ? " bwd" : " fwd");
    ++judged;
  }
  EXPECT_EQ(judged, 10 + 2 * 4);  // H200 2k-32k; GB200 and GB300 2k, 8k; forward and backward
}

// Full causal attention at Llama 3.1's shape (64 query heads over 8 KV heads, head width 128),
// cuDNN's published GB200 and GB300 rows: the fitted curves (cluster_yaml) hold 2k, 8k and 32k;
// 4k and 16k are held out within 10% of each forward and backward.
TEST(BlackwellCudnnAttention, LlamaShapeHeldOut) {
  int judged = 0;
  for (const PublishedRow& r : published_rows(kBlackwellRows)) {
    if (r.window > 0) continue;
    const bool held_out = r.seq == 4096 || r.seq == 16384;
    const double error = print_error(r, held_out ? "" : "(fit)");
    if (!held_out) {
      // the curve's own point, plus the launch's 4 us (3-4% of a 0.1 ms kernel at 2k)
      EXPECT_LT(std::abs(error), 0.05) << "a fit row: " << r.gpu << " " << r.seq;
      continue;
    }
    EXPECT_LT(std::abs(error), 0.10) << r.gpu << " " << r.seq << (r.backward ? " bwd" : " fwd");
    ++judged;
  }
  EXPECT_EQ(judged, 2 * 2 * 2);  // GB200 and GB300; 4k and 16k; forward and backward
}

}  // namespace
}  // namespace twinsim
