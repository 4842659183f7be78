#pragma once
// The version of the JSON reports twinsim writes (docs/SCENARIO.md, "Report schema"):
// simulate's and memory's report, run's measured.json, compare's comparison, serve's,
// search's and capacity's JSON each carry "schema_version" at the top. It grows when a key
// changes meaning or goes away; new keys alone leave it (readers ignore keys they do not
// know). A reader refuses a report of a newer version than it knows (compare::read_report).
namespace twinsim {

inline constexpr const char* kSchemaVersionKey = "schema_version";
inline constexpr int kReportSchemaVersion = 1;

}  // namespace twinsim
