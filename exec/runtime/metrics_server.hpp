#pragma once
// A minimal HTTP/1.0 server for Prometheus to scrape (`twinsim run --metrics-port P`):
// `GET /metrics` answers the body function's text as text/plain; version=0.0.4; any other
// path 404, any other method 405. One thread of its own accepts one connection at a time
// (a scrape every few seconds needs no more); it binds 127.0.0.1 unless an address is
// given, and stops when the server is destroyed.
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace twinsim::exec {

class MetricsServer {
 public:
  // Listens on address:port (port 0: any free port, see port()). Throws
  // std::runtime_error naming the address and port when it cannot.
  MetricsServer(const std::string& address, int port, std::function<std::string()> body);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

 private:
  void serve();
  void answer(int client) const;

  int listener_ = -1;
  int port_ = 0;
  std::function<std::string()> body_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The HTTP response for one request's first line ("GET /metrics HTTP/1.1"), with `body`
// as /metrics' text: status line, headers, blank line, body.
std::string metrics_response(const std::string& request_line, const std::string& body);

}  // namespace twinsim::exec
