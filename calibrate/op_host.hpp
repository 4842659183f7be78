#pragma once
// The executor's own host time per op (issue 61): every op a rank runs is an OpScope
// (exec/model/model_context.hpp) that names it, beats the watchdog and records it in the
// profiler, besides its kernels. The kernels' curves time the kernels alone, so a pass of
// many short ops (a decode) ran longer than its priced ops: 0.24-0.37 us an op between the
// traced ops of tiny TP-2 / EP-2 decodes on a 2-vCPU EPYC (2026-12-07, 13-25 us a pass).
// Timed here as the wall time of empty op scopes over a decode pass's names, which is
// what a pass adds per op beyond its kernels; the file adds it to `kernel_launch_us`.
#include "calibrate/samples.hpp"

namespace twinsim::calibrate {

// `repeats` repeats of `ops` empty op scopes each (8 layers of a decode's op names, in
// order, over and over), every repeat's wall time over `ops`: seconds per op.
Stats op_host_time(int repeats, int ops = 4096);

// The file's fixed cost of one op: the kernels' fitted intercept plus the executor's host
// time per op (0 for a file measured before it was timed).
inline double per_op_fixed_s(double kernel_intercept_s, double op_host_s) { return kernel_intercept_s + op_host_s; }

}  // namespace twinsim::calibrate
