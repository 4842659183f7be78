#pragma once
// The wait a blocking collective absorbs for its group's slowest member (ClusterSpec::
// straggler): the straggler fraction times the compute each member did since the group
// last synchronised. For an op list that runs over and over (a layer's ops, layer after
// layer), each collective of the list gets the compute since the list's previous one, the
// compute after its last collective counting towards its first.
#include <vector>

namespace twinsim {

enum class WaitRole {
  compute,     // counts towards the next collective's wait
  collective,  // blocking: waits for the slowest member
  other,       // neither (a collective overlapped with compute, or one that moves nothing)
};

// The wait itself: a member running `straggler` slower finishes the compute since the last
// synchronisation that much later (ClusterSpec::straggler); the step graph, the op table
// and the search's estimate all charge it through this.
inline double straggler_wait_s(double straggler, double compute_since_s) { return straggler * compute_since_s; }

// Adds to times[i] the wait of every collective i; `times` and `roles` in run order.
void add_straggler_waits(std::vector<double>& times, const std::vector<WaitRole>& roles, double straggler);

}  // namespace twinsim
