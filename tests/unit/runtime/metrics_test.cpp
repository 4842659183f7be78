// Live metrics (exec/runtime/metrics, metrics_server): the HTTP answers by request line,
// the Prometheus text of a hand-made RankMetrics, and a real server on a free port.
#include "exec/runtime/metrics.hpp"
#include "exec/runtime/metrics_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace twinsim::exec {
namespace {

TEST(MetricsServer, AnswersGetMetricsOnly) {
  const std::string ok = metrics_response("GET /metrics HTTP/1.1", "x 1\n");
  EXPECT_EQ(ok.rfind("HTTP/1.0 200 OK\r\n", 0), 0u);
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(ok.substr(ok.size() - 4), "x 1\n");
  EXPECT_EQ(metrics_response("GET / HTTP/1.1", "x").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(metrics_response("POST /metrics HTTP/1.1", "x").rfind("HTTP/1.0 405", 0), 0u);
}

TEST(Metrics, PrometheusTextLabelsEverySampleWithTheRank) {
  RankMetrics m;
  m.rank = 3;
  EXPECT_EQ(prometheus_text(m).find("twinsim_step_seconds"), std::string::npos);  // nothing before a step
  m.step = 4;
  m.steps_done = 5;
  m.step_s = 0.25;
  m.memory_bytes = {{"params", 100}};
  m.memory_peak_bytes = {{"params", 120}};
  m.groups = {{"dp", 4096, 0.5, 0.2}};
  const std::string t = prometheus_text(m);
  EXPECT_NE(t.find("twinsim_steps_total{rank=\"3\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("twinsim_step_seconds{rank=\"3\"} 0.25\n"), std::string::npos) << t;
  EXPECT_NE(t.find("twinsim_memory_bytes{rank=\"3\",category=\"params\"} 100\n"), std::string::npos) << t;
  EXPECT_NE(t.find("twinsim_bytes_sent_total{rank=\"3\",group=\"dp\"} 4096\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE twinsim_bytes_sent_total counter\n"), std::string::npos) << t;
  EXPECT_EQ(to_json(m)["groups"]["dp"]["utilization"], 0.2);
}

std::string fetch(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  ::send(fd, request.data(), request.size(), 0);
  std::string reply;
  char buffer[512];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return reply;
}

TEST(MetricsServer, ServesTheBoardsNewestText) {
  MetricsBoard board;
  RankMetrics m;
  m.rank = 1;
  m.step = 0;
  m.steps_done = 1;
  board.publish(m);
  const MetricsServer server("127.0.0.1", 0, [&board] { return board.text(); });
  ASSERT_GT(server.port(), 0);
  EXPECT_NE(fetch(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").find("twinsim_steps_total{rank=\"1\"} 1"),
            std::string::npos);
  m.steps_done = 2;
  board.publish(m);
  EXPECT_NE(fetch(server.port(), "GET /metrics HTTP/1.0\r\n\r\n").find("twinsim_steps_total{rank=\"1\"} 2"),
            std::string::npos);
  EXPECT_THROW(MetricsServer("not-an-address", 0, [] { return std::string(); }), std::runtime_error);
  EXPECT_THROW(MetricsServer("127.0.0.1", server.port(), [] { return std::string(); }), std::runtime_error);  // taken
}

}  // namespace
}  // namespace twinsim::exec
