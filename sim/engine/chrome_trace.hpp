#pragma once
// Writes a Timeline as Chrome trace JSON (the "Trace Event Format"), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: one complete event (ph "X") per task and
// resource it occupies, ts/dur in microseconds, pid = rank, tid = resource, plus
// process_name/thread_name metadata events naming the tracks. Shared links go to one
// extra process named "network". Streamed directly: full-mode traces hold millions of
// events.
#include <ostream>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/task_graph.hpp"
#include "sim/engine/timeline.hpp"

namespace twinsim::engine {

// A task may stand for several ops run back to back (a layer's forward): the expansion
// fills (name, seconds) pairs laid end to end from the task's start; left empty, the
// task is written as itself.
using TaskExpansion = std::function<void(TaskId, std::vector<std::pair<std::string, double>>&)>;

// Notes on the whole trace (what it covers), written as the trace's "otherData" object,
// which Perfetto shows as the trace's metadata.
using TraceNotes = std::vector<std::pair<std::string, std::string>>;

// Which resources the trace shows (per resource, 1 = written); empty: all of them. A
// task is written on the shown resources it occupies.
using TraceSelection = std::vector<std::uint8_t>;

void write_chrome_trace(std::ostream& out, const TaskGraph& graph, const Timeline& timeline,
                        const TaskExpansion& expand = nullptr, const TraceNotes& notes = {},
                        const TraceSelection& shown = {});
void write_chrome_trace(const std::string& path, const TaskGraph& graph, const Timeline& timeline,
                        const TaskExpansion& expand = nullptr, const TraceNotes& notes = {},
                        const TraceSelection& shown = {});

}  // namespace twinsim::engine
