#include "app/same_inputs.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"

namespace twinsim {

namespace {

// "name\0value\0" for each input, in name order.
std::vector<std::byte> serialize(const NamedInputs& inputs) {
  std::vector<std::byte> out;
  for (const auto& [name, value] : inputs)
    for (const std::string* text : {&name, &value}) {
      for (const char c : *text) out.push_back(static_cast<std::byte>(c));
      out.push_back(std::byte{0});
    }
  return out;
}

NamedInputs deserialize(const std::byte* begin, const std::byte* end) {
  NamedInputs out;
  std::string fields[2];
  int field = 0;
  for (const std::byte* b = begin; b != end; ++b) {
    if (*b != std::byte{0}) {
      fields[field] += static_cast<char>(*b);
      continue;
    }
    if (field == 1) out[fields[0]] = fields[1], fields[0].clear(), fields[1].clear();
    field = 1 - field;
  }
  return out;
}

// FNV-1a, 64 bits (http://www.isthe.com/chongo/tech/comp/fnv/): equal inputs, equal hashes.
std::uint64_t fnv1a(const std::vector<std::byte>& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::byte b : bytes) h = (h ^ static_cast<std::uint64_t>(b)) * 0x100000001b3ULL;
  return h;
}

std::string shown(const NamedInputs& inputs, const std::string& name) {
  const auto it = inputs.find(name);
  return it == inputs.end() ? name + " not given" : name + "=" + it->second;
}

// The first input (in name order) where `other` differs from `first`, or "".
std::string first_difference(const NamedInputs& first, const NamedInputs& other) {
  auto a = first.begin(), b = other.begin();
  while (a != first.end() || b != other.end()) {
    if (b == other.end() || (a != first.end() && a->first < b->first)) return a->first;
    if (a == first.end() || b->first < a->first) return b->first;
    if (a->second != b->second) return a->first;
    ++a, ++b;
  }
  return "";
}

}  // namespace

NamedInputs command_inputs(const CLI::App& command, const ScenarioArgs& args) {
  NamedInputs inputs = scenario_keys(args.path, args.overrides);
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_positional() || option->check_name("--set")) continue;
    std::string value;
    for (const std::string& r : option->results()) value += (value.empty() ? "" : ",") + r;
    inputs[option->get_name()] = value;
  }
  return inputs;
}

void check_same_inputs(engine::Exchange& exchange, const NamedInputs& mine) {
  const std::vector<std::byte> bytes = serialize(mine);
  const std::vector<std::uint64_t> hashes = engine::gather_items(exchange, std::vector<std::uint64_t>{fnv1a(bytes)});
  bool same = true;
  for (const std::uint64_t h : hashes) same = same && h == hashes.front();
  if (same) return;
  // they differ: every process gets every process's inputs and names the same difference
  const std::vector<std::uint64_t> sizes = engine::gather_items(exchange, std::vector<std::uint64_t>{bytes.size()});
  const std::vector<std::byte> all = exchange.gather_all(bytes);
  std::vector<NamedInputs> each;
  std::size_t at = 0;
  for (const std::uint64_t size : sizes) {
    if (at + size > all.size()) break;
    each.push_back(deserialize(all.data() + at, all.data() + at + size));
    at += size;
  }
  for (std::size_t p = 1; p < each.size(); ++p) {
    const std::string name = first_difference(each[0], each[p]);
    if (name.empty()) continue;
    throw ScenarioError("mpirun", "",
                        "the processes of this job were given different inputs: process 0 " + shown(each[0], name) +
                            ", process " + std::to_string(p) + " " + shown(each[p], name) +
                            " (every process must be given the same scenario, --set and options)");
  }
  throw ScenarioError("mpirun", "", "the processes of this job were given different inputs (their hashes differ)");
}

}  // namespace twinsim
