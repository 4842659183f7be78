// The catalog's pricing of FlashAttention-3's paged decode with a 128-row query tile (the
// kernel vLLM 0.8's FLASH_ATTN backend runs on Hopper, before vllm-project/flash-attention PR
// #63) against published timings of that kernel on an H100
// (scenarios/validation/microbench/decode_attention_fa3_paged_published.csv, from
// Dao-AILab/flash-attention#1572: batch 16, 32 KV heads of 128, page size 8, CUDA graph).
// kv_attention_fa3_m128_efficiency was fitted on the slope of the 2,000- and 4,000-token rows
// (scripts/decode_fa3_paged_to_catalog.py); the 128-token row is held out.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "models/layer_ops.hpp"
#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"
#include "tests/unit/validation/decode_attention_op.hpp"

namespace twinsim {
namespace {

struct Row {
  int batch = 0, kv_heads = 0, head_dim = 0, seqlen = 0;
  double time_s = 0;
};

// The catalog's price of the row's call: one new token a sequence over its cache, as the
// serving pass prices it under a stack with serving_decode_fa3_m128 (kv_read_efficiency set
// from the GPU's figure, or 0: the GPU's kv_cache_attention figure).
double catalog_s(const GpuSpec& gpu, const Row& r, double kv_read_efficiency) {
  ComputeOp op = test::decode_attention_op(r.batch, r.seqlen, r.kv_heads, r.kv_heads, r.head_dim);  // MHA
  op.kv_read_efficiency = kv_read_efficiency;
  return op_time_s(gpu, op);
}

// The H100's rows of the 128-row-tile kernel, by cached tokens.
std::map<int, Row> h100_rows() {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/decode_attention_fa3_paged_published.csv");
  EXPECT_TRUE(in);
  std::string line;
  // source,gpu,implementation,batch,num_qo_heads,num_kv_heads,head_dim,page_size,seqlen,time_us,note
  std::getline(in, line);
  std::map<int, Row> rows;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 10 || c[1] != "H100-80GB-HBM3" || c[2] != "fa3_paged_m128") continue;
    const Row r{std::stoi(c[3]), std::stoi(c[5]), std::stoi(c[6]), std::stoi(c[8]), std::stod(c[9]) * 1e-6};
    rows[r.seqlen] = r;
  }
  return rows;
}

// The time each further cached token adds (the fitted slope, within 3%) and the held-out
// 128-token call, within 20%: measured 2026-12-06, 23.4 us priced against 27.6 published
// (-15%: the catalog's call floors, 4 + 1.75 us and 26 ns a (sequence, KV head), are the
// tensor-core kernel's, measured in this repo; the benchmark's fixed part is not taken).
TEST(DecodeFa3Paged, TimePerCachedTokenAsPublished) {
  const auto rows = h100_rows();
  ASSERT_EQ(rows.size(), 3u);
  const GpuSpec gpu = catalog_gpu("h100-sxm");
  const double efficiency = gpu.kv_attention_fa3_m128_efficiency;
  const Row& a = rows.at(2000);
  const Row& b = rows.at(4000);
  const double slope = (catalog_s(gpu, b, efficiency) - catalog_s(gpu, a, efficiency)) / (b.time_s - a.time_s);
  const double held = catalog_s(gpu, rows.at(128), efficiency) / rows.at(128).time_s;
  std::printf("  H100 FA3 paged m128: slope catalog / published %.3f, 128 tokens %.3f\n", slope, held);
  EXPECT_NEAR(slope, 1.0, 0.03);
  EXPECT_NEAR(held, 1.0, 0.20);
}

// Priced at the GPU's kv_cache_attention figure (0.90 of HBM), each cached token would cost
// under 0.65 of the published time, so the judge above can fail; the H200 takes the H100's
// fraction of bandwidth, and the vLLM 0.8.2 judges' scenario asks for the kernel.
TEST(DecodeFa3Paged, TensorCoreFigureWouldReadTheCacheTooFast) {
  const auto rows = h100_rows();
  const GpuSpec gpu = catalog_gpu("h100-sxm");
  const Row& a = rows.at(2000);
  const Row& b = rows.at(4000);
  EXPECT_LT((catalog_s(gpu, b, 0) - catalog_s(gpu, a, 0)) / (b.time_s - a.time_s), 0.65);
  EXPECT_EQ(catalog_gpu("h200-sxm").kv_attention_fa3_m128_efficiency, gpu.kv_attention_fa3_m128_efficiency);
  const Scenario vllm082 = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                              "/scenarios/validation/engines/vllm082-llama3.1-8b-h200-fp8.yaml");
  EXPECT_TRUE(vllm082.stack.serving_decode_fa3_m128);
  EXPECT_FALSE(catalog_stack("vllm-v1").serving_decode_fa3_m128);  // today's vLLM: 64 rows
}

}  // namespace
}  // namespace twinsim
