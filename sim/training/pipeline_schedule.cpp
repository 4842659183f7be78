#include "sim/training/pipeline_schedule.hpp"

#include <algorithm>

#include "sim/training/dualpipe_schedule.hpp"

namespace twinsim {

namespace {

std::vector<PipelineSlot> gpipe(int micro_batches) {
  std::vector<PipelineSlot> order;
  for (int m = 0; m < micro_batches; ++m) order.push_back({true, m, 0});
  for (int m = 0; m < micro_batches; ++m) order.push_back({false, m, 0});
  return order;
}

std::vector<PipelineSlot> one_f_one_b(int pp, int stage, int micro_batches, int extra_warmup) {
  const int warmup = std::min(pp - stage - 1 + extra_warmup, micro_batches);
  std::vector<PipelineSlot> order;
  int next_forward = 0, next_backward = 0;
  for (int i = 0; i < warmup; ++i) order.push_back({true, next_forward++, 0});
  while (next_forward < micro_batches) {
    order.push_back({true, next_forward++, 0});
    order.push_back({false, next_backward++, 0});
  }
  while (next_backward < micro_batches) order.push_back({false, next_backward++, 0});
  return order;
}

// Megatron-LM schedules.py, get_model_chunk_id / microbatch id of virtual step k:
// groups of pp consecutive micro-batches visit chunk 0..v-1 in turn (backward: v-1..0).
PipelineSlot interleaved_slot(int k, bool forward, int pp, int v) {
  const int group = k / (pp * v);
  const int in_group = k % (pp * v);
  int chunk = in_group / pp;
  if (!forward) chunk = v - 1 - chunk;
  return {forward, group * pp + in_group % pp, chunk};
}

std::vector<PipelineSlot> interleaved(int pp, int stage, int micro_batches, int v, int extra_warmup) {
  const int total = micro_batches * v;
  const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp + extra_warmup, total);
  std::vector<PipelineSlot> order;
  int f = 0, b = 0;
  for (; f < warmup; ++f) order.push_back(interleaved_slot(f, true, pp, v));
  while (f < total) {
    order.push_back(interleaved_slot(f++, true, pp, v));
    order.push_back(interleaved_slot(b++, false, pp, v));
  }
  while (b < total) order.push_back(interleaved_slot(b++, false, pp, v));
  return order;
}

}  // namespace

std::vector<PipelineSlot> stage_schedule(Schedule schedule, int pp, int stage, int micro_batches, int virtual_stages,
                                         int extra_warmup) {
  switch (schedule) {
    case Schedule::gpipe: return gpipe(micro_batches);
    case Schedule::one_f_one_b: return one_f_one_b(pp, stage, micro_batches, extra_warmup);
    case Schedule::interleaved:
      if (virtual_stages <= 1) return one_f_one_b(pp, stage, micro_batches, extra_warmup);
      return interleaved(pp, stage, micro_batches, virtual_stages, extra_warmup);
    case Schedule::dualpipe: return dualpipe_schedule(pp, stage, micro_batches);
  }
  return {};
}

int peak_in_flight(const std::vector<PipelineSlot>& order) {
  int live = 0, peak = 0;
  for (const PipelineSlot& s : order) {
    live += s.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace twinsim
