#pragma once
// When one rank of an mpirun job dies (killed, out of memory), mpirun ends the others with
// SIGTERM (then SIGKILL), and the user saw only mpirun's banner. Each rank therefore says
// on stderr, in one line, that it was ended and why that most likely happened, then exits
// with 128 + SIGTERM as the default action would.
namespace twinsim::exec {

// Installs the SIGTERM handler for this rank (safe to call again: the newest rank wins).
void install_termination_notice(int world_rank);

}  // namespace twinsim::exec
