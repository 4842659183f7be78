#pragma once
// DeepSeek's DualPipe (DeepSeek-V3 technical report §3.2.1; github deepseek-ai/DualPipe,
// dualpipe/dualpipe.py, DualPipe.step, commit 3da1bbe): a bidirectional pipeline. Rank r holds
// two chunks: chunk 0, the layers of stage r for the micro-batches that enter at rank 0, and
// chunk 1, the layers of stage pp-1-r for those that enter at rank pp-1 (so the shallowest and
// the deepest layers share ranks 0 and pp-1, and the parameters are held twice). Half the
// micro-batches go each way. In the steady state a forward of one chunk and a backward of the
// other run as one overlapped pair ("F&B"), each one's EP all-to-all beside the other's compute.
#include <vector>

#include "sim/training/pipeline_schedule.hpp"

namespace twinsim {

// The program order of `rank` (0..pp-1) for `micro_batches` (even, >= 2 pp: dualpipe.py asserts
// num_chunks >= num_ranks * 2). Micro-batches 0..m/2-1 run on chunk 0 (rank 0 to pp-1), m/2..m-1
// on chunk 1 (rank pp-1 to 0). An overlapped pair is a forward slot then a backward slot, both
// marked `overlapped`. The zero-bubble split of a backward into input and weight gradients
// (dualpipe.py's enable_zb, _weight_chunk) is not kept: each backward slot is the whole backward.
std::vector<PipelineSlot> dualpipe_schedule(int pp, int rank, int micro_batches);

}  // namespace twinsim
