// The catalog's causal flash attention (attention_efficiency_by_seq) against FlashAttention-2's
// measured forward+backward rates on A100 and H100 (scenarios/validation/microbench/
// attention_fa2_*_fwdbwd_flashattention_repo.csv). The catalog holds the causal rows at 512,
// 2k and 8k tokens (scripts/fa2_attention_to_catalog.py); 1k, 4k and 16k are held out and
// judged here, on the time of one forward plus one backward, as a training step runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "hardware/stack_spec.hpp"
#include "models/layer_ops.hpp"
#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {
namespace {

struct Row {
  int head_dim, seq;
  double tflops;  // FA's convention: causal counts half the rectangle, backward 2.5 forwards
};

// Published rates (FA's convention) of one implementation in one of the FlashAttention
// tables in scenarios/validation/microbench/: {causal, head_dim, seq} -> TFLOP/s.
using RateTable = std::map<std::tuple<bool, int, int>, double>;

RateTable published_rates(const std::string& file, std::string_view implementation) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file);
  EXPECT_TRUE(in) << file;
  RateTable rates;
  std::string line;
  std::getline(in, line);  // gpu,dtype,pass,implementation,causal,head_dim,num_heads,batch,seqlen,tflops,status
  while (std::getline(in, line)) {
    const std::vector<std::string> c = split_csv_line(line);
    if (c.size() < 10 || c[3] != implementation || c[9].empty()) continue;
    rates[{c[4] == "1", std::stoi(c[5]), std::stoi(c[8])}] = std::stod(c[9]);
  }
  return rates;
}

std::vector<Row> causal_fa2_rows(const std::string& file) {
  std::vector<Row> rows;
  for (const auto& [key, tflops] : published_rates(file, "flashattention2"))
    if (std::get<0>(key)) rows.push_back({std::get<1>(key), std::get<2>(key), tflops});
  return rows;
}

// One forward and one backward of the benchmark's shape (hidden 2048, 16384 tokens) as the
// op list counts them: the full rectangle, the backward twice the forward.
// `kernel`: the stack's attention kernel ("": FlashAttention-2).
// `noncausal`: the kernel's curves without the mask (attention_kernel_noncausal_efficiency_by_seq).
double predicted_s(const GpuSpec& gpu, double batch, double heads, const Row& r, std::string_view kernel,
                   bool noncausal = false) {
  ComputeOp op;
  op.kind = ComputeKind::attention;
  op.attention_kernel = kernel;
  op.noncausal = noncausal;
  op.dtype = Dtype::bf16;
  op.head_dim = r.head_dim;
  op.kv_len = r.seq;
  op.flops = 4.0 * batch * heads * r.seq * static_cast<double>(r.seq) * r.head_dim;
  op.bytes = 4.0 * batch * r.seq * heads * r.head_dim * 2;  // q, k, v, o in bf16
  const double fwd = op_cost(gpu, op).time_s();
  op.flops *= 2;
  op.bytes *= 2;
  op.backward = true;
  return fwd + op_cost(gpu, op).time_s();
}

double predicted_s(const GpuSpec& gpu, const Row& r, std::string_view kernel = "") {
  return predicted_s(gpu, 16384.0 / r.seq, 2048.0 / r.head_dim, r, kernel);
}

double measured_s(const Row& r) {
  const double full = 4.0 * (16384.0 / r.seq) * (2048.0 / r.head_dim) * r.seq * static_cast<double>(r.seq) * r.head_dim;
  return 1.75 * full / (r.tflops * 1e12);  // FA counts (full / 2) x 3.5
}

bool is_fit(const Row& r) { return r.seq == 512 || r.seq == 2048 || r.seq == 8192; }

void judge(const std::string& gpu_name, const std::string& file, double band) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  GpuSpec flat = gpu;  // the FLOPs-keyed figures alone: what training used before
  flat.attention_efficiency_by_seq.clear();
  int held_out = 0;
  for (const Row& r : causal_fa2_rows(file)) {
    const double after = predicted_s(gpu, r) / measured_s(r) - 1;
    const double before = predicted_s(flat, r) / measured_s(r) - 1;
    std::printf("%-14s hd%-3d seq %5d %s: error %+6.1f%% (flat figures %+6.1f%%)\n", gpu_name.c_str(), r.head_dim,
                r.seq, is_fit(r) ? "fit " : "held", 100 * after, 100 * before);
    if (is_fit(r)) {
      EXPECT_LT(std::abs(after), 0.02) << gpu_name << " hd" << r.head_dim << " seq " << r.seq;  // launch only
    } else {
      ++held_out;
      EXPECT_LT(std::abs(after), band) << gpu_name << " hd" << r.head_dim << " seq " << r.seq;
    }
  }
  EXPECT_EQ(held_out, 6);
}

// Held out, measured 2026-11-25: within 5.2% (A100) and 6.6% (H100) of the measured time;
// the flat FLOPs-keyed figures training used before: -13% to +86% (A100), -56% to 0% (H100).
TEST(AttentionCurves, A100HeldOutSequences) { judge("a100-sxm-80gb", "attention_fa2_a100_fwdbwd_flashattention_repo.csv", 0.08); }
TEST(AttentionCurves, H100HeldOutSequences) { judge("h100-sxm", "attention_fa2_h100_fwdbwd_flashattention_repo.csv", 0.08); }

// FlashAttention 1.x (attention_kernel: flash1): the same chart's FlashAttention row, causal,
// fit at 512, 2k, 8k (scripts/fa2_attention_to_catalog.py --implementation flashattention_v1
// --kernel flash1), 1k, 4k, 16k held out. The chart's Triton row (OpenAI's triton.ops kernel,
// not flash-attn 1.0's flash_attn_triton that llm-foundry ran, which its docstring puts
// "slightly slower" than this CUDA kernel overall) is printed against the same price.
// Held out, 2026-12-07: within 5.5% (hd64 16k; hd128 within 3.8%); FlashAttention-2's curves
// give the same rows 34-56% less time; the Triton row at hd128 within 8.8% of the flash1 price.
TEST(AttentionCurves, Flash1A100HeldOutSequences) {
  const GpuSpec gpu = catalog_gpu("a100-sxm-80gb");
  const std::string file = "attention_fa2_a100_fwdbwd_flashattention_repo.csv";
  const RateTable triton = published_rates(file, "flashattention_triton");
  int held_out = 0;
  for (const auto& [key, tflops] : published_rates(file, "flashattention_v1")) {
    if (!std::get<0>(key)) continue;  // causal rows only: the curve is the causal kernel's
    const Row r{std::get<1>(key), std::get<2>(key), tflops};
    const double after = predicted_s(gpu, r, kFlash1Attention) / measured_s(r) - 1;
    const double flash2 = predicted_s(gpu, r) / measured_s(r) - 1;
    const Row t{r.head_dim, r.seq, triton.at(key)};
    const double vs_triton = predicted_s(gpu, t, kFlash1Attention) / measured_s(t) - 1;
    std::printf("a100 flash1 hd%-3d seq %5d %s: error %+6.1f%% (flash2 curves %+6.1f%%; chart's Triton row %+6.1f%%)\n",
                r.head_dim, r.seq, is_fit(r) ? "fit " : "held", 100 * after, 100 * flash2, 100 * vs_triton);
    if (is_fit(r)) {
      EXPECT_LT(std::abs(after), 0.02) << "hd" << r.head_dim << " seq " << r.seq;  // launch only
    } else {
      ++held_out;
      EXPECT_LT(std::abs(after), 0.08) << "hd" << r.head_dim << " seq " << r.seq;
    }
    EXPECT_LT(flash2, -0.25) << "hd" << r.head_dim << " seq " << r.seq;  // FA2's curves: a third faster or more
  }
  EXPECT_EQ(held_out, 6);
}

// cuDNN's fused attention measured in this repo (gpu_microbench.py's attention.csv, SDPA's
// cudnn backend): forward and forward+backward times of the same benchmark shape.
struct MeasuredRow {
  Row shape;
  double fwd_s, fwd_bwd_s;
};

std::vector<MeasuredRow> causal_sdpa_rows(const std::string& gpu_dir, const std::string& backend,
                                          const std::string& file = "attention.csv", const std::string& causal = "1") {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/measured_2026-11-26/" +
                   gpu_dir + "/" + file);
  EXPECT_TRUE(in) << gpu_dir;
  std::vector<MeasuredRow> rows;
  std::string line;
  std::getline(in, line);  // backend,batch,heads,seq,head_dim,causal,fwd_s,fwd_bwd_s,fwd_flops
  while (std::getline(in, line)) {
    const std::vector<std::string> c = split_csv_line(line);
    if (c.size() != 9 || c[0] != backend || c[5] != causal) continue;
    rows.push_back({{std::stoi(c[4]), std::stoi(c[3]), 0}, std::stod(c[6]), std::stod(c[7])});
  }
  return rows;
}

// The stack's kernel picks the curves: cuDNN's for `attention_kernel: cudnn`, within 7% of
// the measured forward+backward at the held-out 1k and 4k and 15% at 16k (hd64 beyond the
// fitted 8k: +8.7% / +4.0%; hd128 between 8k and the long rows' 32k: +9.6% / +9.5%, H100 /
// H200), where FlashAttention-2's curves (what every stack ran before) are 27-92% too slow.
void judge_cudnn(const std::string& gpu_name, const std::string& gpu_dir) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  int held_out = 0;
  for (const MeasuredRow& r : causal_sdpa_rows(gpu_dir, "cudnn")) {
    const double flash2 = predicted_s(gpu, r.shape);
    const double cudnn = predicted_s(gpu, r.shape, kCudnnAttention);
    const double after = cudnn / r.fwd_bwd_s - 1, before = flash2 / r.fwd_bwd_s - 1;
    std::printf("%-9s cudnn hd%-3d seq %5d %s: error %+6.1f%% (flash2 curves %+6.1f%%)\n", gpu_name.c_str(),
                r.shape.head_dim, r.shape.seq, is_fit(r.shape) ? "fit " : "held", 100 * after, 100 * before);
    if (is_fit(r.shape)) {
      EXPECT_LT(std::abs(after), 0.03) << gpu_name << " hd" << r.shape.head_dim << " seq " << r.shape.seq;  // launches
    } else {
      ++held_out;
      // 16k of this shape (16 heads) runs 8-10% faster than the curves give it (on 32 heads,
      // LongContextCudnnRows, within 2.4%); 1k and 4k lie between fitted points
      const double band = r.shape.seq > 8192 ? 0.15 : 0.07;
      EXPECT_LT(std::abs(after), band) << gpu_name << " hd" << r.shape.head_dim << " seq " << r.shape.seq;
      EXPECT_GT(before, 0.25);  // FlashAttention-2's figures: 27-92% slower than cuDNN runs
    }
  }
  EXPECT_EQ(held_out, 6);
}

TEST(AttentionCurves, CudnnH100HeldOutSequences) { judge_cudnn("h100-sxm", "h100"); }
TEST(AttentionCurves, CudnnH200HeldOutSequences) { judge_cudnn("h200-sxm", "h200"); }

// PyTorch's flash backend (attention_kernel: sdpa_flash, what torchtitan runs): the curves fit
// on attention.csv's 512, 2k, 8k rows and attention_long.csv's 32k and 128k; held out, the
// benchmark shape's 1k, 4k, 16k and the long rows' 16k, 64k. The flash-attn README's curves
// (flash2) against the same measured rows, printed beside: faster than PyTorch's kernel at 8k
// and slower past it.
void judge_sdpa_flash(const std::string& gpu_name, const std::string& gpu_dir) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  int held_out = 0;
  for (const std::string file : {"attention.csv", "attention_long.csv"}) {
    const bool long_rows = file == "attention_long.csv";
    for (const MeasuredRow& r : causal_sdpa_rows(gpu_dir, "flash", file)) {
      if (long_rows && r.shape.seq <= 8192) continue;
      const double batch = long_rows ? 1 : 16384.0 / r.shape.seq, heads = long_rows ? 32 : 2048.0 / r.shape.head_dim;
      const double after = predicted_s(gpu, batch, heads, r.shape, kSdpaFlashAttention) / r.fwd_bwd_s - 1;
      const double readme = predicted_s(gpu, batch, heads, r.shape, "") / r.fwd_bwd_s - 1;
      const bool fit = long_rows ? (r.shape.seq == 32768 || r.shape.seq == 131072) : is_fit(r.shape);
      std::printf("%-9s sdpa_flash hd%-3d seq %6d %s: error %+6.1f%% (README's flash2 %+6.1f%%)\n", gpu_name.c_str(),
                  r.shape.head_dim, r.shape.seq, fit ? "fit " : "held", 100 * after, 100 * readme);
      // head width 64 has no long rows: its 16k lies past the last fitted point (H100 +12.3%)
      const double band = fit ? 0.03 : (r.shape.head_dim == 64 && r.shape.seq > 8192) ? 0.15 : 0.08;
      EXPECT_LT(std::abs(after), band) << gpu_name << " hd" << r.shape.head_dim << " seq " << r.shape.seq;
      held_out += !fit;
    }
  }
  EXPECT_EQ(held_out, 8) << gpu_name;  // 1k, 4k, 16k at two head widths; 16k, 64k long
}

TEST(AttentionCurves, SdpaFlashH100HeldOutSequences) { judge_sdpa_flash("h100-sxm", "h100"); }
TEST(AttentionCurves, SdpaFlashH200HeldOutSequences) { judge_sdpa_flash("h200-sxm", "h200"); }

// The same kernel called without the causal mask (attention.csv's causal 0 rows, the benchmark
// shape), as PyTorch's ring attention calls it after its first step: the non-causal curves fit
// 512, 2k and 8k; held out 1k, 4k and 16k (past the last fitted point, held flat). A non-causal
// kernel computes the whole rectangle, so at 8k and past it runs at about half the causal
// curve's efficiency (which counts the rectangle it masks): printed beside, the causal curve
// halved.
void judge_sdpa_flash_noncausal(const std::string& gpu_name, const std::string& gpu_dir) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  ASSERT_TRUE(gpu.attention_kernel_noncausal_efficiency_by_seq.contains(kSdpaFlashAttention)) << gpu_name;
  int held_out = 0;
  for (const MeasuredRow& r : causal_sdpa_rows(gpu_dir, "flash", "attention.csv", "0")) {
    const double batch = 16384.0 / r.shape.seq, heads = 2048.0 / r.shape.head_dim;
    const double after = predicted_s(gpu, batch, heads, r.shape, kSdpaFlashAttention, true) / r.fwd_bwd_s - 1;
    // the causal curve's time for the same rectangle is half the non-causal work's: twice it
    const double causal = 2 * predicted_s(gpu, batch, heads, r.shape, kSdpaFlashAttention) / r.fwd_bwd_s - 1;
    std::printf("%-9s sdpa_flash non-causal hd%-3d seq %5d %s: error %+6.1f%% (causal curve %+6.1f%%)\n",
                gpu_name.c_str(), r.shape.head_dim, r.shape.seq, is_fit(r.shape) ? "fit " : "held", 100 * after,
                100 * causal);
    EXPECT_LT(std::abs(after), is_fit(r.shape) ? 0.03 : 0.08)
        << gpu_name << " hd" << r.shape.head_dim << " seq " << r.shape.seq;
    held_out += !is_fit(r.shape);
  }
  EXPECT_EQ(held_out, 6) << gpu_name;  // 1k, 4k, 16k at head widths 64 and 128
}

TEST(AttentionCurves, SdpaFlashNonCausalH100HeldOutSequences) { judge_sdpa_flash_noncausal("h100-sxm", "h100"); }
TEST(AttentionCurves, SdpaFlashNonCausalH200HeldOutSequences) { judge_sdpa_flash_noncausal("h200-sxm", "h200"); }

// Long context (gpu_attention_long.py's attention_long.csv, one H100): one sequence of 32
// heads x 128, 16k to 128k tokens, where long-context training runs. cuDNN's kernel holds its
// rate there (fwd+bwd 525-556 TFLOP/s from 8k to 128k); the H100's and H200's cudnn curves
// take their own 32k and 128k rows (fit, within 2%: launches), and 16k and 64k are held out:
// H100 -1.4% / -0.3%, H200 -2.4% / +0.7% (measured 2026-11-26, the H200's in a later session;
// the H100's curve that held its 8k point past it was +2.0% to +6.9% slow at 16k-128k). PyTorch's flash backend (FlashAttention-2) against the default
// curves (the flash-attn README's FlashAttention-2, held from 8k): +3.6% to +7.0%, printed,
// not judged (a stack runs flash-attn's own kernel).
TEST(AttentionCurves, LongContextCudnnRows) {
  const std::pair<std::string, std::string> gpus[] = {{"h100-sxm", "h100"}, {"h200-sxm", "h200"}};  // measured_2026-11-26/
  for (const auto& [gpu_name, gpu_dir] : gpus) {
    const GpuSpec gpu = catalog_gpu(gpu_name);
    int held_out = 0;
    for (const std::string backend : {"cudnn", "flash"}) {
      for (const MeasuredRow& r : causal_sdpa_rows(gpu_dir, backend, "attention_long.csv")) {
        if (r.shape.seq <= 8192) continue;
        const double predicted = predicted_s(gpu, 1, 32, r.shape, backend == "cudnn" ? kCudnnAttention : "");
        const double error = predicted / r.fwd_bwd_s - 1;
        const bool fit = r.shape.seq == 32768 || r.shape.seq == 131072;
        std::printf("%-9s %-5s hd128 seq %6d %s: error %+6.1f%%\n", gpu_name.c_str(), backend.c_str(), r.shape.seq,
                    fit ? "fit " : "held", 100 * error);
        if (backend != "cudnn") continue;
        EXPECT_LT(std::abs(error), fit ? 0.02 : 0.05) << gpu_name << " cudnn seq " << r.shape.seq;
        held_out += !fit;
      }
    }
    EXPECT_EQ(held_out, 2) << gpu_name;  // 16k, 64k
  }
}

// Issue #54, the 8B cp1-32k judge (+18%, attention about 60% of its step): do the Grand Teton
// boards' HBM2e (2.4 TB/s, not the 3.35 of the H100 these curves were measured on) slow PyTorch's
// flash kernels at long context? The same kernels on an H200 (4.8 TB/s, the same die and 700 W
// limit) say no. If a share phi of a kernel's time followed 1 / HBM bandwidth, the H200 would take
// 1 - phi (1 - 3.35 / 4.8) of the H100's time. Measured (attention_long.csv, 32 heads x 128,
// causal, forward+backward), H200 / H100 by hand: 8k 1.015, 16k 1.020, 32k 1.015, 64k 1.000,
// 128k 0.997: no row faster by more than 0.3%, so phi <= 0.01, and 2.4 TB/s adds at most
// phi (3.35 / 2.4 - 1) = 0.4% to the attention time; the cp1-32k miss needs about 20% of it.
TEST(AttentionCurves, LongFlashKernelsDoNotFollowHbmBandwidth) {
  const double h100_bw = catalog_gpu("h100-sxm").hbm_bandwidth_Bps;
  const double h200_bw = catalog_gpu("h200-sxm").hbm_bandwidth_Bps;
  const double teton_bw = catalog_gpu("h100-sxm-96gb-hbm2e").hbm_bandwidth_Bps;
  std::map<int, double> h100_s;
  for (const MeasuredRow& r : causal_sdpa_rows("h100", "flash", "attention_long.csv"))
    h100_s[r.shape.seq] = r.fwd_bwd_s;
  double phi_max = -1;
  int compared = 0;
  for (const MeasuredRow& r : causal_sdpa_rows("h200", "flash", "attention_long.csv")) {
    if (!h100_s.count(r.shape.seq)) continue;
    const double ratio = r.fwd_bwd_s / h100_s.at(r.shape.seq);
    const double phi = (1 - ratio) / (1 - h100_bw / h200_bw);  // ratio = 1 - phi (1 - bw_h100 / bw_h200)
    std::printf("flash hd128 seq %6d: H200 / H100 time %.3f, bandwidth-bound share %+.3f\n", r.shape.seq, ratio, phi);
    phi_max = std::max(phi_max, phi);
    ++compared;
  }
  EXPECT_EQ(compared, 5);  // 8k to 128k
  EXPECT_NEAR(h100_bw / h200_bw, 3350.0 / 4800.0, 1e-9);
  EXPECT_LT(phi_max, 0.02);
  EXPECT_LT(phi_max * (h100_bw / teton_bw - 1), 0.01);  // what HBM2e could add to attention
}

constexpr const char* kFa3Forward = "attention_fa3_h100_fwd_flashattention_repo.csv";
constexpr const char* kFa3Backward = "attention_fa3_paper_h100_bwd.csv";

// The backward figure's numbers were read from the paper's chart: they agree with the other
// sources. FlashAttention-2's forward (the forward figure) and backward (the backward figure)
// give one forward plus one backward within 6% of the forward+backward rate the
// FlashAttention-2 README measured for the same shapes (attention_fa2_h100_fwdbwd_...csv):
// three figures, two of them independent of the one checked.
TEST(AttentionCurves, Fa3PaperBackwardAgreesWithFa2Readme) {
  const RateTable fwd = published_rates(kFa3Forward, "flashattention2");
  const RateTable bwd = published_rates(kFa3Backward, "flashattention2");
  const RateTable both = published_rates("attention_fa2_h100_fwdbwd_flashattention_repo.csv", "flashattention2");
  int compared = 0;
  for (const auto& [key, rate_bwd] : bwd) {
    if (!fwd.contains(key) || !both.contains(key)) continue;
    const double combined = 3.5 / (1.0 / fwd.at(key) + 2.5 / rate_bwd);  // FA: backward = 2.5 forwards
    EXPECT_NEAR(combined / both.at(key), 1.0, 0.06)
        << "hd" << std::get<1>(key) << " seq " << std::get<2>(key) << ": " << combined << " vs " << both.at(key);
    ++compared;
  }
  EXPECT_EQ(compared, 12);  // hd64 and hd128, 512 to 16k, not causal
}

// `attention_kernel: flash3` against FlashAttention-3's causal forward plus its backward (the
// non-causal backward times the forward's causal / non-causal ratio, as the catalog takes
// it): within 2% at the fitted 512, 2k, 8k and 16k (the longest, held past it); held out, 1k
// and 4k, within 4.8%; FlashAttention-2's curves are 35-80% slower.
void judge_flash3(const std::string& gpu_name) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  const RateTable fwd = published_rates(kFa3Forward, "flashattention3");
  const RateTable bwd = published_rates(kFa3Backward, "flashattention3");
  int held_out = 0;
  for (const auto& [key, plain_bwd] : bwd) {
    const auto [causal, head_dim, seq] = key;
    const Row shape{head_dim, seq, 0};
    const double full = 4.0 * (16384.0 / seq) * (2048.0 / head_dim) * seq * static_cast<double>(seq) * head_dim;
    const double causal_fwd = fwd.at({true, head_dim, seq});
    const double causal_bwd = plain_bwd * causal_fwd / fwd.at({false, head_dim, seq});
    const double measured = full / 2 / (causal_fwd * 1e12) + 2.5 * full / 2 / (causal_bwd * 1e12);
    const double after = predicted_s(gpu, shape, kFlash3Attention) / measured - 1;
    const double before = predicted_s(gpu, shape) / measured - 1;
    const bool fit = is_fit(shape) || seq == 16384;
    std::printf("%-9s flash3 hd%-3d seq %5d %s: error %+6.1f%% (flash2 curves %+6.1f%%)\n", gpu_name.c_str(), head_dim,
                seq, fit ? "fit " : "held", 100 * after, 100 * before);
    if (fit) {
      EXPECT_LT(std::abs(after), 0.02) << gpu_name << " hd" << head_dim << " seq " << seq;  // launches
    } else {
      ++held_out;
      EXPECT_LT(std::abs(after), 0.06) << gpu_name << " hd" << head_dim << " seq " << seq;
      EXPECT_GT(before, 0.3);  // FlashAttention-2's figures
    }
  }
  EXPECT_EQ(held_out, 4);
}

// kv_attention_fa2_efficiency (an FA2-class prefill over the paged cache: SGLang's FlashInfer
// backend runs a prompt chunk's cached prefix on the FA2 template at page size 1) priced by
// attention_cost against FlashAttention-2's published non-causal forward at head width 128
// times FlashInfer 0.2's 0.90 for page size 1 (its blog, 2024-12-16): fitted at 8k, 4k and 16k
// held out, within 2% with the call's launch; the rest of the attention (0.75) would be 2.2x
// faster. One chunk of `seq` queries over `seq` cached keys, 32 heads.
TEST(AttentionCurves, PagedPrefixAtFlashInferFa2Rate) {
  const RateTable fwd = published_rates(kFa3Forward, "flashattention2");
  for (const char* name : {"h100-sxm", "h200-sxm"}) {
    const GpuSpec gpu = catalog_gpu(name);
    for (const int seq : {4096, 8192, 16384}) {
      ComputeOp op;
      op.kind = ComputeKind::attention;
      op.kernel = kKvCacheAttentionKernel;
      op.dtype = Dtype::bf16;
      op.head_dim = 128;
      op.flops = 4.0 * seq * static_cast<double>(seq) * 32 * 128;  // the full rectangle
      op.prefix_flops = op.flops;
      op.bytes = 2.0 * 2 * seq * 8 * 128 + 2.0 * 2 * seq * 32 * 128;  // K,V of 8 KV heads; Q and O
      op.kv_items = 8;
      const double rate = op.flops / op_time_s(gpu, op);
      const double published = 0.90 * fwd.at({false, 128, seq}) * 1e12;
      EXPECT_NEAR(rate / published, 1.0, 0.02) << name << " seq " << seq;
      op.prefix_flops = 0;
      EXPECT_GT(op.flops / op_time_s(gpu, op) / published, 2.0) << name << " seq " << seq;
    }
  }
}

TEST(AttentionCurves, Flash3H100HeldOutSequences) { judge_flash3("h100-sxm"); }
TEST(AttentionCurves, Flash3H200HeldOutSequences) { judge_flash3("h200-sxm"); }

}  // namespace
}  // namespace twinsim
