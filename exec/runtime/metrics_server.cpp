#include "exec/runtime/metrics_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace twinsim::exec {

namespace {

std::string response(const std::string& status, const std::string& type, const std::string& body) {
  std::ostringstream r;
  r << "HTTP/1.0 " << status << "\r\nContent-Type: " << type << "\r\nContent-Length: " << body.size()
    << "\r\nConnection: close\r\n\r\n"
    << body;
  return r.str();
}

[[noreturn]] void fail(const std::string& address, int port, const std::string& what) {
  throw std::runtime_error("--metrics-port: cannot listen on " + address + ":" + std::to_string(port) + ": " + what);
}

}  // namespace

std::string metrics_response(const std::string& request_line, const std::string& body) {
  std::istringstream line(request_line);
  std::string method, target;
  line >> method >> target;
  if (method != "GET") return response("405 Method Not Allowed", "text/plain", "only GET\n");
  if (target != "/metrics") return response("404 Not Found", "text/plain", "metrics are at /metrics\n");
  return response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
}

MetricsServer::MetricsServer(const std::string& address, int port, std::function<std::string()> body)
    : body_(std::move(body)) {
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(static_cast<std::uint16_t>(port));
  if (port < 0 || port > 65535) fail(address, port, "not a port (0-65535)");
  if (inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1) fail(address, port, "not an IPv4 address");
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) fail(address, port, std::strerror(errno));
  const int on = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(listener_, reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0 || ::listen(listener_, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listener_);
    fail(address, port, why);
  }
  socklen_t size = sizeof where;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &size);
  port_ = ntohs(where.sin_port);
  thread_ = std::thread([this] { serve(); });
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listener_);
}

void MetricsServer::serve() {
  while (!stop_) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // wakes every 0.1 s to see whether to stop
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    answer(client);
    ::close(client);
  }
}

void MetricsServer::answer(int client) const {
  timeval limit{1, 0};  // a client that sends nothing for a second is dropped
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  std::string request;
  char buffer[1024];
  while (request.find("\r\n") == std::string::npos && request.size() < 8192) {
    const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  const std::string reply = metrics_response(request.substr(0, request.find("\r\n")), body_());
  std::size_t sent = 0;
  while (sent < reply.size()) {
    const ssize_t n = ::send(client, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

}  // namespace twinsim::exec
