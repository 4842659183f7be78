#pragma once
// The clock a GPU's GEMMs sustain under its power limit. A GPU's GEMM curves are the rates
// of a cool GPU; when GEMMs fill most of a stretch of work the board reaches its power limit
// and the clock falls (an H100 at 700 W: 797 TFLOP/s for an 8192x28672x4096 product that
// fills up to ~30% of a loop, 683 back to back at 1380 MHz; scenarios/validation/microbench/
// measured_2026-11-26/h100/gemm_duty_cycle.csv). Memory-bound kernels draw less than GEMMs,
// an idle GPU (waiting on a collective) less still.
//
// The limit acts within 40-80 ms (the same folder's power_response.csv), so what sets the
// clock is the mix inside a pass of work, not the step's long idle phases (pipeline
// bubbles, exposed data-parallel collectives), after which only the first tens of
// milliseconds run cool. Training takes the mix of a layer's forward and backward
// (sim/training/layer_costs.cpp), serving that of a layer's ops in one pass
// (sim/inference/iteration_cost.cpp): an engine runs the same pass back to back.
#include "hardware/gpu_spec.hpp"

namespace twinsim {

// A stretch of one GPU's work: seconds of tensor-core kernels at the curves' (cool) rates,
// of memory-bound kernels, and of idling (collectives waited on, the host issuing).
struct WorkMix {
  double tensor_s = 0;
  double memory_s = 0;
  double idle_s = 0;
};

// The mix's draw on the limit: tensor-core time counts whole, memory-bound time by
// memory_bound_load, idle time not at all (the duty-cycle sweep's spin-kernel gaps).
double power_load(const PowerLimitedGemm& limit, const WorkMix& mix);

// The GEMMs' clock against the curves' over that stretch: 1 up to the knee, then falling
// linearly with the load (scripts/duty_cycle_to_catalog.py fits the three figures).
// 1 on a GPU without power_limited_gemm.
double sustained_gemm_clock(const GpuSpec& gpu, const WorkMix& mix);

// The sweep's figures at the GPU's own power limit (GpuSpec::power_limit_W). The fit says
// two things about the board's draw: the limit is reached at the knee's load at the cool
// clock, and at full load the clock falls to c1 = 1 - slope (1 - knee). With the draw
// proportional to the load and to the clock to a power beta (dynamic power f V^2, the
// voltage following the clock), knee = c1^beta gives beta; a limit r times the measured one
// is then reached at the load knee r, and full load holds the clock (knee r)^(1/beta). The
// figures returned join those two points linearly, as the fit does; at r = 1 they are the
// fit's own. Judged on the H100 PCIe (350 W) against the SXM (700 W): power_limit_test.cpp.
// Open (not priced, s10 report_12): below the sweep's full-load clock c1 beta was never
// measured. The sweep's own columns say the GEMM is clock-bound there (682.5 TFLOP/s at 1380
// MHz is 0.915 of 132 SMs x 4096 FLOP/cycle, 797 at 1980 MHz 0.744), and its energy per FLOP
// fell 0.79 from 1980 to 1380 MHz (dynamic draw over the sleep rows' 119 W floor), so
// draw ~ clock^1.67 below c1 if the voltage keeps falling, ^1 at its floor. At 500 W that is
// 0.69 (0.60) at full load, not 0.742: the 8B torchtitan judges move toward 0, 70B TP8 stays,
// but the PCIe judge moves from -4% to -17%, so the two data disagree. s11 report_07 found no
// published H100 clock-vs-cap table (arXiv 2604.11391's numbers are not stored), and every
// capped board's GEMM loop found runs faster than this scaling, not slower: the H800 PCIe
// (350 W, -5% as the H100 PCIe's -4%) and the H200 NVL at 600 W (cuBLAS 8192^3 684.8 TFLOP/s,
// NVIDIA/tilus #154: 22.6% above the full-load prediction); power_limit_test.cpp.
PowerLimitedGemm clock_figures_at(const PowerLimitedGemm& measured, double power_limit_W);

// The draw's exponent in the clock, beta, that a duty-cycle fit implies (knee = c1^beta, as
// clock_figures_at reads it; the H100's fit: ln 0.64 / ln 0.843 = 2.62). 0 where the fit
// does not say (no knee below full load, or no fall of the clock).
double draw_clock_exponent(const PowerLimitedGemm& fit);

// A power-bound GEMM's rate on the same die with `sms` SMs under a board limit of `limit_W`,
// against its rate measured with `measured_sms` under `measured_W`, both at full load (GEMMs
// back to back, the clock below its boost): with the draw proportional to the SMs and to the
// clock to the power beta, the clock is (limit_W / measured_W x measured_sms / sms)^(1/beta)
// of the measured one, and the rate that times sms / measured_sms.
double power_bound_rate_ratio(double beta, double measured_W, int measured_sms, double limit_W, int sms);

// The clock of fused attention against its curves'. Attention sets its own clock, not the
// mix's: alone at the sweep's 700 W, PyTorch's flash and cuDNN kernels draw the limit (671-687
// W, h100/attention_power.csv), and in a profiled 700 W step whose mix puts the GEMMs at 0.93
// the attention kernels ran at their curves' rate (measured_step_test.cpp: cuDNN's within 15%;
// the mix's clock would make them 24% slow). So 1 at the sweep's limit or
// above; below it the draw law of the duty-cycle fit (draw ~ clock^beta) gives
// (limit / measured_at_W)^(1/beta) whatever the mix: 0.8795 at 500 W on the H100.
double sustained_attention_clock(const GpuSpec& gpu);

}  // namespace twinsim
