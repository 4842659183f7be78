// Every published training run in scenarios/validation/training/ as a memory judge: a run that
// ran must fit (issue 54: "No published run that ran is predicted not to fit"; issue 53 for the
// MoE runs), and a configuration its source reports out of memory (the files named *-oom.yaml,
// each quoting its report) must be refused. The runs' published peaks (torchtitan's reserved,
// LitGPT's and MLPerf's allocated, ml-engineering's reserved) are judged in their own tests;
// this one prints, for every file, the allocated peak, the reserve as the caching allocator
// model holds it (memory.reserved_peak_bytes), what lives outside the allocator and the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Reported out of memory by its source: the file's name says so.
bool reported_out_of_memory(const std::string& file) {
  return file.size() > 9 && file.compare(file.size() - 9, 9, "-oom.yaml") == 0;
}

// Runs that ran and are still predicted not to fit, each with what is known of why; the test
// fails when the list changes either way (a new one, or one that now fits: take it out).
// None: mlperf50-llama2-70b-lora-b200 (184.2 GiB predicted on the B200's 179.1 while its FP8_ACT
// and FP8_DPA were not priced) fits since plan.fp8_activation_input and plan.fp8_attention, at
// 153.7 GiB against the published 168.8 allocated (lora_published_runs_test.cpp, MlperfLora).
const std::vector<std::string> kRanButStillRefused = {};

struct Verdicts {
  int ran = 0, oom_reports = 0;
  std::vector<std::string> ran_but_refused, oom_but_accepted;
};

Verdicts judge_every_file() {
  Verdicts v;
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TWINSIM_SOURCE_DIR) / "scenarios/validation/training"))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& path : files) {
    const std::string file = path.filename().string();
    const MemoryReport m = predict_memory(load_scenario_file(path.string()));
    const bool oom = reported_out_of_memory(file);
    std::printf("%-52s allocated %6.1f reserved %6.1f outside %4.2f of %6.1f GiB: %s%s\n", file.c_str(),
                static_cast<double>(m.peak_bytes) / kGiB, static_cast<double>(m.reserved_peak_bytes) / kGiB,
                static_cast<double>(m.outside_allocator_bytes) / kGiB, static_cast<double>(m.capacity_bytes) / kGiB,
                m.fits ? "fits" : "refused", oom ? " (reported out of memory)" : "");
    if (oom) {
      ++v.oom_reports;
      if (m.fits) v.oom_but_accepted.push_back(file);
    } else {
      ++v.ran;
      if (!m.fits) v.ran_but_refused.push_back(file);
    }
  }
  return v;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + " ";
  return out;
}

TEST(MemoryJudges, WhatRanFitsAndWhatRanOutOfMemoryIsRefused) {
  const Verdicts v = judge_every_file();
  std::printf("%d published runs that ran: %zu predicted not to fit (%s); %d reported out of memory: %zu accepted\n",
              v.ran, v.ran_but_refused.size(), joined(v.ran_but_refused).c_str(), v.oom_reports,
              v.oom_but_accepted.size());
  EXPECT_GE(v.ran, 90);
  EXPECT_GE(v.oom_reports, 2);
  EXPECT_EQ(v.ran_but_refused, kRanButStillRefused) << joined(v.ran_but_refused);
  EXPECT_TRUE(v.oom_but_accepted.empty()) << joined(v.oom_but_accepted);
}

}  // namespace
}  // namespace twinsim
