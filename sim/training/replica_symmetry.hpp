#pragma once
// Full-fidelity mode at scale: the data-parallel replicas of a stage run the same program
// at the same instants unless the cluster tells them apart, so full mode simulates only
// replicas 0 .. k-1 of every stage and lets them stand for the others.
//
// Why that is exact: shifting every rank's DP index by k (d -> d + k mod dp, all stages
// at once) renumbers the GPUs. When that renumbering maps nodes onto nodes and each
// node's NICs onto NICs, and expert-parallel groups onto expert-parallel groups, it maps
// the step's task graph onto itself: every task of replica d onto the same task of
// replica d + k, every DP collective (one task over all replicas) onto itself, every
// link onto a link of the same users. The engine's rules (rendezvous, FIFO links) then
// give image tasks the same start and end, so replica d + k's timeline is replica d's.
// A DP collective waits for its members' streams and NICs; the simulated members' state
// is every member's state. tests/unit/training/replica_symmetry_test.cpp checks the
// folded step against the per-rank one over plans and cluster layouts.
#include "scenario/scenario.hpp"

namespace twinsim {

// The smallest k dividing plan.dp for which the shift by k is such a symmetry (plan.dp
// when none smaller is: nothing folds). Full mode simulates k replicas of each stage,
// pp * tp * cp * k GPUs.
int symmetric_replicas(const Scenario& s);

}  // namespace twinsim
