#pragma once
// Microbenchmarks of the executor's MPI communicator (exec/runtime), nccl-tests style:
// each collective over message sizes on the communicator's ranks. Every rank calls it;
// a call's time is the slowest rank's (max-reduced), so the figure is what a training
// step waits for; each call is made as a step makes it, after work that took the caches.
#include <string>
#include <vector>

#include "calibrate/samples.hpp"
#include "exec/runtime/communicator.hpp"

namespace twinsim::calibrate {

struct CommPoint {
  std::string op;  // all_reduce, all_gather, reduce_scatter, send_recv
  int ranks = 0;
  double bytes = 0;  // nccl-tests "size": the whole buffer (all-gather: the gathered output)
  Stats seconds;
  // bus bandwidth of nccl-tests (doc/PERFORMANCE.md): algbw x 2(n-1)/n for all-reduce,
  // x (n-1)/n for all-gather and reduce-scatter, x 1 for send/recv
  double bus_factor() const;
  double busbw_Bps() const { return seconds.median > 0 ? bus_factor() * bytes / seconds.median : 0; }
};

// Sizes in bytes from 4 KiB to 16 MiB (quick: 3 sizes).
std::vector<double> comm_sizes(bool quick);

struct CommSweepOptions {
  bool quick = false;  // 3 sizes
  int repeats = 7;     // each point times 3 x repeats single calls
  // what every rank writes of its own before each call, as a step's ops between two
  // collectives do: about what one layer's ops of the validation suite's models touch (an
  // MLP of hidden 256, FFN 1024, 256 tokens: 1 MiB of fc1 weights, 1 MiB of its output,
  // 2 x 0.25 MiB in and out)
  double evict_bytes = 4 << 20;
};

std::vector<CommPoint> comm_sweep(exec::Communicator& comm, const CommSweepOptions& o);

// How far the slowest rank runs behind the ranks' mean on the same work: every rank
// runs the same mix of a GEMM, a GeLU and an AdamW update (about 50 ms) from a barrier,
// and a repeat's figure is max / mean - 1 of their times (a fraction, in Stats' fields).
// Every rank calls it.
Stats straggler_sweep(exec::Communicator& comm, int repeats);

}  // namespace twinsim::calibrate
