// The catalog's pricing of a serving decode step's attention (sim/cost/compute_cost.cpp
// attention_cost) against FlashInfer's own published decode figures (blog 2024-02-02,
// "Accelerating Self-Attentions for LLM Serving with FlashInfer", Figures 6 and 9, read from
// the PNGs; scenarios/validation/microbench/decode_attention_flashinfer_blog_h100_a100.csv):
// bandwidth utilisation of batch-64 decode calls on an H100 SXM and an A100 PCIe by cached
// tokens, with 8 query heads per KV head on CUDA cores and on tensor cores, and MHA on CUDA cores.
// The blog's calls carry a fixed 17-26 us of its benchmark (cold L2, split-KV merge) that the
// catalog's call time (1.75 us, measured in this repo) does not, so what is judged is the
// time each further cached token adds: the slope between the held-out 1k and 4k rows.
// kv_attention_cuda_core_efficiency was fitted on the 512/2k/8k rows
// (scripts/decode_cuda_core_to_catalog.py --gqa4, with flashinfer#703's group-4 call fitting the
// fixed share a cached token costs); the tensor-core and MHA rows fitted nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "models/layer_ops.hpp"
#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"
#include "tests/unit/validation/decode_attention_op.hpp"

namespace twinsim {
namespace {

struct Row {
  std::string gpu, implementation;
  int batch = 0, qo_heads = 0, kv_heads = 0, head_dim = 0, seqlen = 0;
  double utilization = 0;
};

// The blog's own bandwidths (its table: H100 SXM 3,352 GB/s, A100 PCIe 1,935 GB/s).
double blog_bandwidth_Bps(const std::string& gpu) { return gpu == "H100-SXM5-80GB" ? 3352e9 : 1935e9; }

double kv_bytes(const Row& r) { return 4.0 * r.batch * r.seqlen * r.kv_heads * r.head_dim; }  // K, V in 16 bits

double published_s(const Row& r) { return kv_bytes(r) / (r.utilization / 100 * blog_bandwidth_Bps(r.gpu)); }

// The catalog's price of the row's call: one decode token a sequence over its cache.
double catalog_s(const GpuSpec& gpu, const Row& r, bool cuda_cores) {
  ComputeOp op = test::decode_attention_op(r.batch, r.seqlen, r.qo_heads, r.kv_heads, r.head_dim);
  op.cuda_cores = cuda_cores;
  return op_time_s(gpu, op);
}

std::map<std::tuple<std::string, std::string, int, int>, Row> read_rows() {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/decode_attention_flashinfer_blog_h100_a100.csv");
  EXPECT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,figure,gpu,implementation,batch,num_qo_heads,num_kv_heads,head_dim,seqlen,...
  std::map<std::tuple<std::string, std::string, int, int>, Row> rows;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 10) continue;
    Row r{c[2],           c[3], std::stoi(c[4]), std::stoi(c[5]), std::stoi(c[6]), std::stoi(c[7]), std::stoi(c[8]),
          std::stod(c[9])};
    rows[{r.gpu, r.implementation, r.qo_heads / r.kv_heads, r.seqlen}] = r;
  }
  return rows;
}

struct Series {
  const char* gpu;
  const char* catalog;  // the entry of the same die
  const char* implementation;
  int group, from, to;
  bool cuda_cores;
};

// Catalog / published time per further cached token between the two held-out rows: within 8%.
// Measured 2026-12-07 (s11, with the fixed share a cached token costs the CUDA-core kernel,
// compute_cost.cpp kFlashInferCudaCoreTokenHeads; 1.007 and 0.997 before): CUDA cores, group 8:
// H100 1.004, A100 0.991 (math-bound); tensor cores,
// group 8: H100 1.045 (the catalog's kv_cache_attention 0.90 of HBM, the blog's 0.945), A100
// 0.975 (its memory_efficiency 0.85); MHA on CUDA cores, H100 2k-4k of batch 16: 1.009
// (memory-bound at the same 0.90).
TEST(DecodeCudaCore, TimePerCachedTokenAsFlashInferPublished) {
  const auto rows = read_rows();
  ASSERT_EQ(rows.size(), 41u);
  const Series series[] = {{"H100-SXM5-80GB", "h100-sxm", "flashinfer_cuda_cores", 8, 1024, 4096, true},
                           {"A100-PCIE-80GB", "a100-sxm-80gb", "flashinfer_cuda_cores", 8, 1024, 4096, true},
                           {"H100-SXM5-80GB", "h100-sxm", "flashinfer_tensor_cores", 8, 1024, 4096, false},
                           {"A100-PCIE-80GB", "a100-sxm-80gb", "flashinfer_tensor_cores", 8, 1024, 4096, false},
                           {"H100-SXM5-80GB", "h100-sxm", "flashinfer_cuda_cores", 1, 2048, 4096, true}};
  for (const Series& s : series) {
    GpuSpec gpu = catalog_gpu(s.catalog);
    gpu.hbm_bandwidth_Bps = blog_bandwidth_Bps(s.gpu);  // the A100 PCIe's 1,935 GB/s against the SXM's 2,039
    const Row& a = rows.at({s.gpu, s.implementation, s.group, s.from});
    const Row& b = rows.at({s.gpu, s.implementation, s.group, s.to});
    const double published = published_s(b) - published_s(a);
    const double catalog = catalog_s(gpu, b, s.cuda_cores) - catalog_s(gpu, a, s.cuda_cores);
    std::printf("  %s %s group %d, %d-%d tokens: catalog / published %.3f\n", s.gpu, s.implementation, s.group, s.from,
                s.to, catalog / published);
    EXPECT_NEAR(catalog / published, 1.0, 0.08) << s.gpu << " " << s.implementation << " group " << s.group;
  }
}

// Priced as the tensor-core kernel, the CUDA-core rows would come out about twice as fast as
// published (the H100's 8 query heads per KV head: 0.90 of HBM against the published 0.52), so
// the judge above can fail; and the CUDA-core rate is a figure of its die: the A100's fraction
// of its fp32 peak (0.35) is not the H100's (0.209, whose peak counts Hopper's doubled FP32 lanes).
TEST(DecodeCudaCore, TensorCorePricingWouldBeTwiceTooFast) {
  const auto rows = read_rows();
  GpuSpec gpu = catalog_gpu("h100-sxm");
  gpu.hbm_bandwidth_Bps = blog_bandwidth_Bps("H100-SXM5-80GB");
  const Row& a = rows.at({"H100-SXM5-80GB", "flashinfer_cuda_cores", 8, 1024});
  const Row& b = rows.at({"H100-SXM5-80GB", "flashinfer_cuda_cores", 8, 4096});
  const double published = published_s(b) - published_s(a);
  EXPECT_LT((catalog_s(gpu, b, false) - catalog_s(gpu, a, false)) / published, 0.65);
  EXPECT_GT(catalog_gpu("a100-sxm-80gb").kv_attention_cuda_core_efficiency,
            1.5 * catalog_gpu("h100-sxm").kv_attention_cuda_core_efficiency);
  EXPECT_EQ(catalog_gpu("h200-sxm").kv_attention_cuda_core_efficiency,
            catalog_gpu("h100-sxm").kv_attention_cuda_core_efficiency);  // the same die and clocks
}

// The same kernel at 4 query heads per KV head: flashinfer#703's one call (A100 80GB, batch 57 x
// 8,192 tokens, 32 query / 8 KV heads of 128, fp16, CUDA cores, 1.595 ms; scenarios/validation/
// microbench/decode_attention_flashinfer_gqa4_issue703.csv). It fitted the fixed share a cached
// token costs the kernel (compute_cost.cpp kFlashInferCudaCoreTokenHeads, 6.0 query heads' worth)
// together with the blog's group-8 slope, so this checks the fit as the catalog carries it, not a
// held-out figure. By hand: work = 4 x 466,944 x 32 x 128 FLOPs + 6.0 x 1.9126e9 B = 1.9126e10
// at 0.616 x 19.5 TFLOP/s = 1.592 ms (the read at 0.90 of 2,039 GB/s: 1.04 ms, not the bound).
// Priced as before the share (group math only, 0.35 of fp32), the call was 1.121 ms (-29.7%).
// The same share on the H200 prices SGLang 0.4.4's group-4 and group-3 decode (Llama 3.1 8B,
// 3.2 3B) at 24.6 / 10 = 2.46 and 24.6 / 9 = 2.73 TB/s of K,V: 0.51 and 0.57 of its HBM.
TEST(DecodeCudaCore, GroupFourCallAsFlashInferIssue703) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/decode_attention_flashinfer_gqa4_issue703.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,gpu,implementation,batch,qo,kv,head_dim,page_size,seqlen,dtype,time_ms,note
  double published_ms = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() > 10 && c[2] == "flashinfer_cuda_cores") published_ms = std::stod(c[10]);
  }
  ASSERT_NEAR(published_ms, 1.595, 1e-9);
  const GpuSpec a100 = catalog_gpu("a100-sxm-80gb");
  const Row call{"A100-SXM4-80GB", "flashinfer_cuda_cores", 57, 32, 8, 128, 8192, 0};
  const double catalog_ms = catalog_s(a100, call, true) * 1e3;
  std::printf("  A100 group 4, 57 x 8192 tokens: catalog %.3f ms, published %.3f ms\n", catalog_ms, published_ms);
  EXPECT_NEAR(catalog_ms / published_ms, 1.0, 0.03);
  // the H200's K,V read rate on CUDA cores, 50 sequences of 5,000 tokens: group 4 and 3
  const GpuSpec h200 = catalog_gpu("h200-sxm");
  for (const auto& [qo, expected] : {std::pair{32, 0.51}, std::pair{24, 0.57}}) {
    const Row r{"H200", "flashinfer_cuda_cores", 50, qo, 8, 128, 5000, 0};
    const double share = kv_bytes(r) / catalog_s(h200, r, true) / h200.hbm_bandwidth_Bps;
    std::printf("  H200 group %d: K,V read at %.3f of HBM\n", qo / 8, share);
    EXPECT_NEAR(share, expected, 0.01) << "group " << qo / 8;
  }
}

// FlashInfer's page-size ablation (the same blog, Figure 12: A100 PCIe, batch 1, 32 query = 32 KV
// heads of 128, page sizes 1, 4, 8 and 16 and no page table on one line; read from the PNG:
// scenarios/validation/microbench/decode_attention_flashinfer_page_size_a100.csv, nothing fitted
// to it). The catalog has no page-size term, so page size 1 is priced as any other: judged on the
// time per further cached token between held-out rows. Measured 2026-12-07: 8k-32k 1.072,
// 16k-64k 1.074 (the catalog's A100 memory_efficiency 0.85 against the figure's 0.91). A cache
// read at the 0.40 of HBM the SGLang 0.4.4 judges imply for page size 1 (issue #56) would be about
// 2.3 here. The figure's page indices are the benchmark's own, likely in order: it prices the
// per-token index lookup, not slots scattered through the pool.
TEST(DecodeCudaCore, PageSizeOneAsFlashInferPublished) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/decode_attention_flashinfer_page_size_a100.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,figure,gpu,implementation,batch,qo,kv,head_dim,page_size,seqlen,pct,note
  std::map<int, Row> by_len;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 11) continue;
    ASSERT_EQ(c[8], "1");  // page size
    const Row r{c[2],
                c[3],
                std::stoi(c[4]),
                std::stoi(c[5]),
                std::stoi(c[6]),
                std::stoi(c[7]),
                std::stoi(c[9]),
                std::stod(c[10])};
    by_len[r.seqlen] = r;
  }
  ASSERT_EQ(by_len.size(), 6u);
  GpuSpec gpu = catalog_gpu("a100-sxm-80gb");
  gpu.hbm_bandwidth_Bps = blog_bandwidth_Bps("A100-PCIE-80GB");
  for (const auto& [from, to] : {std::pair{8192, 32768}, std::pair{16384, 65536}}) {
    const Row& a = by_len.at(from);
    const Row& b = by_len.at(to);
    const double published = published_s(b) - published_s(a);
    const double catalog = catalog_s(gpu, b, true) - catalog_s(gpu, a, true);
    std::printf("  A100 PCIe MHA page size 1, %d-%d tokens: catalog / published %.3f\n", from, to, catalog / published);
    EXPECT_NEAR(catalog / published, 1.0, 0.08) << from << "-" << to;
  }
}

}  // namespace
}  // namespace twinsim
