// ProcessGroups on a real MPI world: for several plans of the world's size, every group
// communicator holds exactly the global ranks group_ranks() names (itself checked against
// Megatron-LM's loops in tests/unit/runtime), in that order, and a sum over the group is
// the sum of those ranks.
#include <string>
#include <vector>

#include "exec/runtime/mpi_communicator.hpp"
#include "exec/runtime/process_groups.hpp"
#include "tests/mpi/mpi_check.hpp"

using namespace twinsim::exec;

namespace {

std::string describe(const ParallelDims& d) {
  return "tp" + std::to_string(d.tp) + " cp" + std::to_string(d.cp) + " ep" + std::to_string(d.ep) + " dp" +
         std::to_string(d.dp) + " pp" + std::to_string(d.pp);
}

// The world ranks of a group communicator's members, in its rank order.
std::vector<int> members(Communicator& group, int world_rank) {
  std::vector<float> all(static_cast<std::size_t>(group.size()));
  const float me = static_cast<float>(world_rank);
  group.all_gather(&me, all.data(), 1);
  return std::vector<int>(all.begin(), all.end());
}

void check_plan(Communicator& world, const ParallelDims& d) {
  ProcessGroups pg(world, d);
  const int me = world.rank();
  const RankCoords want = rank_coords(d, me);
  const std::string plan = describe(d) + " rank " + std::to_string(me);
  MPI_CHECK(pg.coords().tp == want.tp && pg.coords().cp == want.cp && pg.coords().dp == want.dp &&
                pg.coords().pp == want.pp,
            plan + ": coordinates");
  MPI_CHECK(pg.tp().rank() == want.tp && pg.pp().rank() == want.pp && pg.dp().rank() == want.dp &&
                pg.cp().rank() == want.cp && pg.ep().rank() == want.ep,
            plan + ": group ranks are the coordinates");

  const std::vector<std::pair<GroupKind, const char*>> kinds = {
      {GroupKind::tp, "tp"}, {GroupKind::cp, "cp"}, {GroupKind::dp, "dp"}, {GroupKind::dp_cp, "dp_cp"},
      {GroupKind::pp, "pp"}, {GroupKind::ep, "ep"}, {GroupKind::expert_dp, "expert_dp"},
      {GroupKind::embedding, "embedding"}};
  for (const auto& [kind, name] : kinds) {
    const std::vector<int> expected = group_ranks(d, me, kind);
    if (kind == GroupKind::embedding) {
      MPI_CHECK(pg.in_embedding_group() == !expected.empty(), plan + ": embedding membership");
      MPI_CHECK(pg.in_embedding_group() == (pg.is_first_stage() || pg.is_last_stage()),
                plan + ": embedding group is the first and last stage");
      if (!pg.in_embedding_group()) continue;
    }
    Communicator& g = pg.group(kind);
    MPI_CHECK(members(g, me) == expected, plan + ": " + name + " group members");
    float sum = static_cast<float>(me), want = 0;
    for (int r : expected) want += static_cast<float>(r);
    g.all_reduce(&sum, 1);
    MPI_CHECK(sum == want, plan + ": " + name + " all_reduce");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  auto world = MpiCommunicator::world();
  std::vector<ParallelDims> plans;
  if (world->size() == 8)
    plans = {{.tp = 2, .cp = 1, .ep = 1, .dp = 2, .pp = 2}, {.tp = 2, .cp = 2, .ep = 2, .dp = 2, .pp = 1},
             {.tp = 4, .cp = 1, .ep = 1, .dp = 1, .pp = 2}, {.tp = 1, .cp = 1, .ep = 2, .dp = 2, .pp = 4},
             {.tp = 1, .cp = 1, .ep = 4, .dp = 8, .pp = 1}};
  else if (world->size() == 4)
    plans = {{.tp = 2, .cp = 1, .ep = 1, .dp = 1, .pp = 2}, {.tp = 1, .cp = 2, .ep = 2, .dp = 2, .pp = 1},
             {.tp = 1, .cp = 1, .ep = 1, .dp = 1, .pp = 4}};
  plans.push_back({.tp = 1, .cp = 1, .ep = 1, .dp = world->size(), .pp = 1});
  for (const ParallelDims& d : plans) check_plan(*world, d);

  bool threw = false;  // a plan that does not multiply out to the world is refused
  try {
    ProcessGroups bad(*world, ParallelDims{.tp = world->size() + 1});
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  MPI_CHECK(threw, "a plan of the wrong world size must throw");
  return mpi_test::finish(*world, "process_groups_mpi");
}
