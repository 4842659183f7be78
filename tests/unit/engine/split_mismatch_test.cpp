// The engine split over processes (simulate(graph, exchange, ...)) given different graphs,
// as two MPI processes given different inputs would build them: every process stops with
// one message naming both shapes, and none reads past its own state (the link grant once
// indexed its graph with a larger graph's task ids and crashed).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "tests/unit/engine/thread_exchange.hpp"

namespace twinsim::engine {
namespace {

// `links` transfers, one after another, each over the shared link on its own stream.
TaskGraph transfers(int links) {
  TaskGraph g;
  const CategoryId cat = g.category("pp_comm");
  const ResourceId link = g.add_link("nic");
  for (int i = 0; i < links; ++i) {
    const ResourceId stream = g.add_stream(i, "comm");
    g.add_task("send" + std::to_string(i), 1.0, cat, {stream, link});
  }
  return g;
}

TEST(SplitMismatch, DifferentGraphsStopEveryProcessByName) {
  const TaskGraph small = transfers(2), large = transfers(40);
  Table table(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p)
    threads.emplace_back([&, p] {
      ThreadExchange ex(table, p);
      try {
        simulate(p == 0 ? small : large, ex, [](int rank) { return rank % 2; });
      } catch (const std::runtime_error& e) {
        errors[p] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int p = 0; p < 2; ++p) {
    EXPECT_NE(errors[p].find("process 0's step graph has 2 tasks, 3 resources and 0 dependencies, process 1's 40 "
                             "tasks, 41 resources and 0 dependencies"),
              std::string::npos)
        << "process " << p << ": " << errors[p];
    EXPECT_NE(errors[p].find("the same scenario, --set and options"), std::string::npos) << errors[p];
  }
}

}  // namespace
}  // namespace twinsim::engine
