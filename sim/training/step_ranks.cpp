#include "sim/training/step_ranks.hpp"

#include <map>

#include "sim/cost/collective_cost.hpp"

namespace twinsim {

int node_of(const Scenario& s, int rank) { return rank / s.cluster.gpus_per_node; }

namespace {

// A GPU's streams; its compute slows while its side streams run NCCL kernels
// (nccl_compute_slowdown: the SMs those kernels hold).
StageStreams add_gpu(const Scenario& s, engine::TaskGraph& g, int rank) {
  StageStreams st;
  st.rank = rank;
  st.compute = g.add_stream(rank, "compute");
  st.tp = g.add_stream(rank, "tp_comm");
  st.cp = g.add_stream(rank, "cp_comm");
  st.dp = g.add_stream(rank, "dp_comm");
  const double slowdown = nccl_compute_slowdown(s.cluster);
  if (slowdown > 1.0) {
    const engine::ResourceId side[] = {st.tp, st.cp, st.dp};
    g.add_interference(st.compute, side, slowdown);
  }
  return st;
}

// Every GPU of stage `stage`, and its groups: index i = tp_i + tp * (cp_i + cp * dp_i).
StageRanks full_stage(const Scenario& s, int stage, engine::TaskGraph& g, std::map<int, engine::ResourceId>& nics) {
  const Plan& p = s.plan;
  const int per_stage = p.tp * p.cp * p.dp;
  const bool multi_node = s.cluster.nodes > 1;
  StageRanks sr;
  for (int i = 0; i < per_stage; ++i) {
    const int rank = stage * per_stage + i;
    StageStreams st = add_gpu(s, g, rank);
    if (multi_node) {
      // rail-optimised nodes (DGX): local GPU j sends through NIC j mod nics_per_node
      const int nic = node_of(s, rank) * s.cluster.nics_per_node + (rank % s.cluster.gpus_per_node) % s.cluster.nics_per_node;
      auto it = nics.find(nic);
      if (it == nics.end())
        it = nics.emplace(nic, g.add_link("node" + std::to_string(nic / s.cluster.nics_per_node) + ".nic" +
                                          std::to_string(nic % s.cluster.nics_per_node))).first;
      st.nic = it->second;
    }
    sr.gpus.push_back(st);
  }
  auto index = [&](int t, int c, int d) { return t + p.tp * (c + p.cp * d); };
  for (int d = 0; d < p.dp; ++d)
    for (int c = 0; c < p.cp; ++c) {
      sr.tp.emplace_back();
      for (int t = 0; t < p.tp; ++t) sr.tp.back().push_back(index(t, c, d));
    }
  for (int d = 0; d < p.dp; ++d)
    for (int t = 0; t < p.tp; ++t) {
      sr.cp.emplace_back();
      for (int c = 0; c < p.cp; ++c) sr.cp.back().push_back(index(t, c, d));
    }
  for (int c = 0; c < p.cp; ++c)
    for (int t = 0; t < p.tp; ++t) {
      sr.dp.emplace_back();
      for (int d = 0; d < p.dp; ++d) sr.dp.back().push_back(index(t, c, d));
    }
  // expert-parallel groups: blocks of ep consecutive (cp, dp) positions with the same tp index
  for (int t = 0; t < p.tp; ++t)
    for (int start = 0; start < p.cp * p.dp; start += p.ep) {
      sr.ep.emplace_back();
      for (int k = start; k < start + p.ep; ++k) sr.ep.back().push_back(t + p.tp * k);
    }
  return sr;
}

}  // namespace

std::vector<StageRanks> make_stage_ranks(const Scenario& s, Fidelity fidelity, engine::TaskGraph& g) {
  std::vector<StageRanks> stages;
  std::map<int, engine::ResourceId> nics;
  for (int i = 0; i < s.plan.pp; ++i) {
    if (fidelity == Fidelity::full) {
      stages.push_back(full_stage(s, i, g, nics));
      continue;
    }
    StageRanks sr;
    sr.gpus.push_back(add_gpu(s, g, i));
    // fast mode: the stage's GPU has one NIC, shared by its collectives and pipeline
    // transfers that cross nodes (sim/training/step_graph.cpp, add_nics)
    if (s.cluster.nodes > 1) sr.gpus.back().nic = g.add_link("stage" + std::to_string(i) + ".nic");
    sr.tp = sr.cp = sr.ep = sr.dp = {{0}};
    stages.push_back(sr);
  }
  return stages;
}

}  // namespace twinsim
