#include "sim/engine/chrome_trace.hpp"
#include "io/whole_file.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace twinsim::engine {
namespace {

// JSON string literal of `s` (RFC 8259 §7: quote, backslash and control characters).
void write_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out << buf;
    } else {
      out << c;
    }
  }
  out << '"';
}

// Seconds as microseconds, shortest round-trip form (exact, and deterministic).
void write_us(std::ostream& out, double seconds) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, seconds * 1e6);
  out.write(buf, end - buf);
}

void write_metadata(std::ostream& out, const char* what, int pid, int tid,
                    std::string_view name) {
  out << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << pid << ",\"tid\":" << tid
      << ",\"args\":{\"name\":";
  write_string(out, name);
  out << "}}";
}

void write_event(std::ostream& out, std::string_view name, std::string_view category, int pid, int tid,
                 double start_s, double duration_s) {
  out << "{\"ph\":\"X\",\"name\":";
  write_string(out, name);
  out << ",\"cat\":";
  write_string(out, category);
  out << ",\"pid\":" << pid << ",\"tid\":" << tid << ",\"ts\":";
  write_us(out, start_s);
  out << ",\"dur\":";
  write_us(out, duration_s);
  out << "}";
}

}  // namespace

void write_chrome_trace(std::ostream& out, const TaskGraph& g, const Timeline& tl, const TaskExpansion& expand,
                        const TraceNotes& notes, const TraceSelection& shown) {
  auto show = [&shown](ResourceId r) { return shown.empty() || shown[r]; };
  int network_pid = 0;  // one past the highest rank
  for (ResourceId r = 0; r < g.num_resources(); ++r)
    network_pid = std::max(network_pid, g.resource(r).rank + 1);
  auto pid_of = [&](ResourceId r) {
    return g.resource(r).rank >= 0 ? g.resource(r).rank : network_pid;
  };

  out << "{\"displayTimeUnit\":\"ms\",";
  if (!notes.empty()) {
    out << "\"otherData\":{";
    for (std::size_t i = 0; i < notes.size(); ++i) {
      if (i > 0) out << ",";
      write_string(out, notes[i].first);
      out << ":";
      write_string(out, notes[i].second);
    }
    out << "},";
  }
  out << "\"traceEvents\":[\n";
  bool first = true;
  auto separate = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  std::vector<bool> named(network_pid + 1, false);
  for (ResourceId r = 0; r < g.num_resources(); ++r) {
    if (!show(r)) continue;
    int pid = pid_of(r);
    if (!named[pid]) {
      named[pid] = true;
      std::string process = pid == network_pid ? "network" : "rank " + std::to_string(pid);
      separate();
      write_metadata(out, "process_name", pid, 0, process);
    }
    separate();
    write_metadata(out, "thread_name", pid, r, g.resource(r).track);
  }
  std::vector<std::pair<std::string, double>> parts;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const auto on = g.resources_of(t);
    if (std::none_of(on.begin(), on.end(), show)) continue;
    parts.clear();
    if (expand) expand(t, parts);
    const std::string_view category = g.category_name(g.category_of(t));
    for (ResourceId r : g.resources_of(t)) {
      if (!show(r)) continue;
      if (parts.empty()) {
        separate();
        write_event(out, g.name(t), category, pid_of(r), r, tl.start_s[t], tl.end_s[t] - tl.start_s[t]);
        continue;
      }
      double at = tl.start_s[t];
      for (const auto& [name, seconds] : parts) {
        separate();
        write_event(out, name, category, pid_of(r), r, at, seconds);
        at += seconds;
      }
    }
  }
  out << "\n]}\n";
}

void write_chrome_trace(const std::string& path, const TaskGraph& graph, const Timeline& timeline,
                        const TaskExpansion& expand, const TraceNotes& notes, const TraceSelection& shown) {
  io::write_file_whole(path,
                       [&](std::ostream& out) { write_chrome_trace(out, graph, timeline, expand, notes, shown); });
}

}  // namespace twinsim::engine
