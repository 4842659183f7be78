#include "models/report_memory.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace twinsim {

namespace {

using nlohmann::json;

std::int64_t bytes_at(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number())
    throw std::invalid_argument(where + "." + key + " is missing or not a number");
  return j[key].is_number_integer() ? j[key].get<std::int64_t>() : std::llround(j[key].get<double>());
}

CategoryBytes read_categories(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + " is missing or not an object");
  CategoryBytes out{};
  for (MemCategory c : kMemCategories) {
    const std::string name(category_name(c));
    if (j.contains(name)) out[static_cast<std::size_t>(c)] = bytes_at(j, name.c_str(), where);
  }
  return out;
}

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw std::invalid_argument(where + "." + key + " is missing");
  return j[key];
}

}  // namespace

json category_json(const CategoryBytes& bytes) {
  json j = json::object();
  for (MemCategory c : kMemCategories) j[std::string(category_name(c))] = bytes[static_cast<std::size_t>(c)];
  return j;
}

json to_json(const MemorySection& m) {
  json stages = json::array();
  for (const StagePeak& s : m.stages) {
    json st = {{"stage", s.stage}, {"peak_bytes", s.peak_bytes}, {"breakdown", category_json(s.breakdown)}};
    if (s.host_bytes) st["host_bytes"] = *s.host_bytes;
    stages.push_back(std::move(st));
  }
  json j = {{"capacity_bytes", m.capacity_bytes}, {"peak_bytes", m.peak_bytes}, {"fits", m.fits},
            {"breakdown", category_json(m.breakdown)}, {"stages", stages}, {"host_bytes", m.host_bytes}};
  if (m.host_capacity_bytes) j["host_capacity_bytes"] = *m.host_capacity_bytes;
  if (m.host_breakdown) j["host_breakdown"] = category_json(*m.host_breakdown);
  if (m.nvme_bytes) j["nvme_bytes"] = *m.nvme_bytes;
  if (m.nvme_breakdown) j["nvme_breakdown"] = category_json(*m.nvme_breakdown);
  if (m.nvme_capacity_bytes) j["nvme_capacity_bytes"] = *m.nvme_capacity_bytes;
  if (m.reserved_peak_bytes) j["reserved_peak_bytes"] = *m.reserved_peak_bytes;
  if (m.outside_allocator_bytes) j["outside_allocator_bytes"] = *m.outside_allocator_bytes;
  if (!m.per_rank.empty()) {
    json ranks = json::array();
    for (const RankPeak& r : m.per_rank)
      ranks.push_back({{"rank", r.rank}, {"stage", r.stage}, {"peak_bytes", r.peak_bytes},
                       {"category_peaks", category_json(r.category_peaks)}});
    j["per_rank"] = std::move(ranks);
  }
  return j;
}

MemorySection read_memory_section(const json& memory, const std::string& side) {
  const std::string where = side + " report: memory";
  if (!memory.is_object()) throw std::invalid_argument(where + " is missing");
  MemorySection m;
  m.peak_bytes = bytes_at(memory, "peak_bytes", where);
  m.breakdown = read_categories(member(memory, "breakdown", where), where + ".breakdown");
  if (memory.contains("capacity_bytes")) m.capacity_bytes = bytes_at(memory, "capacity_bytes", where);
  if (memory.contains("fits") && memory["fits"].is_boolean()) m.fits = memory["fits"].get<bool>();
  if (memory.contains("host_bytes")) m.host_bytes = bytes_at(memory, "host_bytes", where);
  if (memory.contains("host_capacity_bytes")) m.host_capacity_bytes = bytes_at(memory, "host_capacity_bytes", where);
  if (memory.contains("host_breakdown"))
    m.host_breakdown = read_categories(memory["host_breakdown"], where + ".host_breakdown");
  if (memory.contains("nvme_bytes")) m.nvme_bytes = bytes_at(memory, "nvme_bytes", where);
  if (memory.contains("nvme_breakdown"))
    m.nvme_breakdown = read_categories(memory["nvme_breakdown"], where + ".nvme_breakdown");
  if (memory.contains("nvme_capacity_bytes")) m.nvme_capacity_bytes = bytes_at(memory, "nvme_capacity_bytes", where);
  if (memory.contains("reserved_peak_bytes")) m.reserved_peak_bytes = bytes_at(memory, "reserved_peak_bytes", where);
  if (memory.contains("outside_allocator_bytes"))
    m.outside_allocator_bytes = bytes_at(memory, "outside_allocator_bytes", where);
  if (memory.contains("stages") && memory["stages"].is_array())
    for (const json& s : memory["stages"]) {
      const std::string at = where + ".stages[]";
      StagePeak p;
      p.stage = static_cast<int>(bytes_at(s, "stage", at));
      p.peak_bytes = bytes_at(s, "peak_bytes", at);
      p.breakdown = read_categories(member(s, "breakdown", at), at + ".breakdown");
      if (s.contains("host_bytes")) p.host_bytes = bytes_at(s, "host_bytes", at);
      m.stages.push_back(p);
    }
  if (memory.contains("per_rank") && memory["per_rank"].is_array())
    for (const json& r : memory["per_rank"]) {
      const std::string at = where + ".per_rank[]";
      RankPeak p;
      p.rank = static_cast<int>(bytes_at(r, "rank", at));
      p.stage = static_cast<int>(bytes_at(r, "stage", at));
      p.peak_bytes = bytes_at(r, "peak_bytes", at);
      p.category_peaks = read_categories(member(r, "category_peaks", at), at + ".category_peaks");
      m.per_rank.push_back(p);
    }
  return m;
}

}  // namespace twinsim
