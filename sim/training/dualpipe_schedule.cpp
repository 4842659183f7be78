#include "sim/training/dualpipe_schedule.hpp"

#include <algorithm>

namespace twinsim {

namespace {

// dualpipe.py's chunk counters: a phase of the rank (0, 1; flipped on the second half of the
// ranks) names a direction, and each direction's forwards and backwards run in micro-batch order.
struct DualPipeOrder {
  int half_mb = 0;
  bool second_half = false;
  int next_forward[2] = {0, 0}, next_backward[2] = {0, 0};
  std::vector<PipelineSlot> order;

  void add(bool forward, int phase, bool overlapped) {
    const int direction = phase ^ (second_half ? 1 : 0);
    int& next = forward ? next_forward[direction] : next_backward[direction];
    order.push_back({forward, direction * half_mb + next++, direction, overlapped});
  }
  void f(int phase) { add(true, phase, false); }
  void b(int phase) { add(false, phase, false); }
  void fb(int forward_phase, int backward_phase) {  // _forward_backward_chunk
    add(true, forward_phase, true);
    add(false, backward_phase, true);
  }
};

}  // namespace

std::vector<PipelineSlot> dualpipe_schedule(int pp, int rank, int micro_batches) {
  const int half_ranks = pp / 2, half_rank = std::min(rank, pp - 1 - rank);
  const bool middle = half_rank == half_ranks - 1;
  DualPipeOrder o;
  o.half_mb = micro_batches / 2;
  o.second_half = rank >= half_ranks;
  for (int i = 0; i < (half_ranks - half_rank - 1) * 2; ++i) o.f(0);    // step 1: nF0
  for (int i = 0; i < half_rank + 1; ++i) o.f(0), o.f(1);               // step 2: nF0F1
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) o.b(1), o.f(1);  // step 3: nB1W1F1
  for (int i = 0; i < o.half_mb - pp + half_rank + 1; ++i) {            // step 4: nF0B1F1B0
    if (i == 0 && middle) {                                             // "We don't overlap these two chunks"
      o.f(0), o.b(1);
    } else {
      o.fb(0, 1);
    }
    o.fb(1, 0);
  }
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) o.b(1), o.fb(1, 0);  // step 5: nB1F1B0
  for (int i = 0; i < half_rank + 1; ++i) o.b(1), o.b(0);                   // step 6: nB1B0
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) o.b(0);              // step 7: nWB0
  return o.order;  // step 8 (nW): the weight gradients, kept in the backwards
}

}  // namespace twinsim
