// Published serving measurements (scenarios/validation/inference/*.yaml, each with its
// source in a comment) against the prediction of `twinsim simulate`. A case fails when
// the prediction leaves the stated band around the published figure.
//
// The bands: ±20%, issue 17's bound for serving (decode is HBM-bound and the model knows
// the bytes exactly; prefill is GEMM-bound and the A100's GEMM curve is measured). When
// tightened from ±25% / ±35% the A100 cases were within 9.2% and the H100 FP8 ones within
// 19.5%, but for the 7B FP8 prefill (below), whose wider band says what is not modelled.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"

namespace twinsim {
namespace {

enum class Metric { ttft_s, tpot_s, output_tokens_per_s };

struct PublishedCase {
  const char* file;  // in scenarios/validation/inference/
  Metric metric;
  double published;
  double band;  // allowed relative error
};

const PublishedCase kCases[] = {
    {"lmdeploy-llama2-7b-a100-bs1", Metric::tpot_s, 0.010, 0.20},
    {"lmdeploy-llama2-13b-a100-bs1", Metric::tpot_s, 0.017, 0.20},
    {"lmdeploy-llama2-70b-4xa100-bs1", Metric::tpot_s, 0.029, 0.20},
    {"lmdeploy-llama2-7b-a100-ttft-2048", Metric::ttft_s, 0.139, 0.20},
    {"trtllm-llama2-7b-a100-ttft-2048", Metric::ttft_s, 0.133, 0.20},
    {"trtllm-llama2-70b-4xa100-ttft-2048", Metric::ttft_s, 0.377, 0.20},
    // -11.5% (-28.5% when FP8 GEMMs ran at the 16-bit curve's fraction of twice the peak,
    // -18.7% with cuBLASLt's measured fp8 curve at a cool GPU's clock; the prefill's mix now
    // slows its GEMMs under the power limit, sim/cost/power_limit.hpp)
    {"trtllm-llama2-7b-h100-fp8-ttft-2048", Metric::ttft_s, 0.036, 0.20},
    {"trtllm-llama2-70b-4xh100-fp8-ttft-2048", Metric::ttft_s, 0.109, 0.20},
    // under stack trtllm: its 6 us a sequence and pass fitted on the A100's batch 384 (+3.4%
    // with the device alone, 0.0%), the H100's batch 64 held out (+5.2% with the device alone)
    {"trtllm-llama2-7b-h100-fp8-bs64", Metric::output_tokens_per_s, 9193, 0.20},
    {"trtllm-llama2-7b-a100-bs384", Metric::output_tokens_per_s, 5586, 0.20},
    // ZeRO-Inference streaming the weights from NVMe (plan.offload_params, offload_device:
    // nvme), judged only: the drives' rates are DeepSpeed's ds_io microbenchmark, nothing
    // fitted to these runs. When added: H200 +16.5% (its 10.3 s prefill is compute-bound,
    // each decode pass the drives' 2.94 s), A100 -5.7%, H100 -8.0% (its drives' rate is the
    // source's statement, ~6 GB/s each, not a measurement)
    {"deepnvme-zero-inference-llama3-70b-h200-nvme", Metric::output_tokens_per_s, 26, 0.20},
    {"deepnvme-zero-inference-llama3-70b-a100-nvme", Metric::output_tokens_per_s, 7, 0.20},
    {"deepnvme-zero-inference-llama3-70b-h100-nvme", Metric::output_tokens_per_s, 8.876, 0.20},
};

double predicted(const InferencePrediction& p, Metric m) {
  switch (m) {
    case Metric::ttft_s: return p.ttft_s;
    case Metric::tpot_s: return p.tpot_s;
    case Metric::output_tokens_per_s: return p.output_tokens_per_s;
  }
  return 0;
}

const char* name(Metric m) {
  return m == Metric::ttft_s ? "ttft_s" : m == Metric::tpot_s ? "tpot_s" : "output_tokens_per_s";
}

class PublishedServing : public testing::TestWithParam<PublishedCase> {};

TEST_P(PublishedServing, PredictionWithinBand) {
  const PublishedCase& c = GetParam();
  const std::string path = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/inference/" + c.file + ".yaml";
  const InferencePrediction p = predict_inference(load_scenario_file(path));
  const double value = predicted(p, c.metric);
  const double error = value / c.published - 1;
  std::printf("  %-40s %-20s published %10.4g  predicted %10.4g  (%+5.1f%%)\n", c.file, name(c.metric), c.published,
              value, 100 * error);
  EXPECT_LE(std::abs(error), c.band) << c.file << ": " << name(c.metric) << " predicted " << value << ", published "
                                     << c.published << " (band ±" << 100 * c.band << "%)";
  // the scenario must also fit: the published runs did
  EXPECT_GE(p.max_batch, 1) << c.file;
}

INSTANTIATE_TEST_SUITE_P(Cases, PublishedServing, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<PublishedCase>& info) {
                           std::string n = info.param.file;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace twinsim
