// twinsim._core: the simulator for Python. Scenarios cross the boundary as JSON text
// (JSON is YAML, so load_scenario_text reads it) and reports come back as JSON text,
// which the package turns into dicts, objects and DataFrames (python/twinsim).
// A ScenarioError becomes twinsim.ScenarioError (a ValueError) with the same message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "compare/comparison.hpp"
#include "models/memory_category.hpp"
#include "scenario/errors.hpp"
#include "scenario/hardware_file.hpp"
#include "scenario/load.hpp"
#include "scenario/yaml_guard.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/report/model_description.hpp"
#include "sim/report/report.hpp"
#include "sim/search/capacity.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/recompute_budget.hpp"
#include "sim/search/search_json.hpp"
#include "sim/search/serving_capacity.hpp"

namespace py = pybind11;

namespace twinsim {
namespace {

// A YAML scalar as the JSON value it reads as: integer, float, bool, null or string.
nlohmann::json scalar_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~") return nullptr;
  try {
    std::size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

nlohmann::json yaml_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) j[kv.first.as<std::string>()] = yaml_json(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& v : n) j.push_back(yaml_json(v));
      return j;
    }
    case YAML::NodeType::Scalar: return scalar_json(n);
    default: return nullptr;
  }
}

// The scenario file's own mapping (not resolved) as JSON text, for a Python dict.
std::string scenario_file_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError("scenario", path, "cannot be opened (no such file, or not readable)");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return yaml_json(load_yaml(text.str(), path)).dump();
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path, "", std::string("is not valid YAML: ") + e.what());
  }
}

std::string text_json(const std::string& text) {
  try {
    return yaml_json(load_yaml(text, "<scenario>")).dump();
  } catch (const YAML::Exception& e) {
    throw ScenarioError("<scenario>", "", std::string("is not valid YAML: ") + e.what());
  }
}

// The scenario (JSON text) with `key` set to `value` (JSON text) by the loader's --set
// rules (scenario_text_with_override), back as JSON text.
std::string set_json(const std::string& text, const std::string& key, const std::string& value) {
  return text_json(scenario_text_with_override(text, key + "=" + value));
}

Scenario load(const std::string& text, const std::vector<std::string>& overrides) {
  return load_scenario_text(text, overrides, "<python scenario>");
}

// The resolved scenario's plan (every knob) and cluster, as the simulator will use them.
std::string resolved_json(const std::string& text, const std::vector<std::string>& overrides) {
  const Scenario s = load(text, overrides);
  nlohmann::json j = {{"name", s.name},
                      {"model", s.model.name},
                      {"cluster", {{"name", s.cluster.name}, {"gpu", s.cluster.gpu.name},
                                   {"gpus_per_node", s.cluster.gpus_per_node}, {"nodes", s.cluster.nodes}}},
                      {"plan", to_json(s.plan)},
                      {"gpus", s.plan.world_size()},
                      {"training", s.is_training()}};
  return j.dump();
}

std::string simulate_json(const std::string& text, const std::vector<std::string>& overrides,
                          const std::string& trace, const std::string& fidelity) {
  const Scenario s = load(text, overrides);
  const std::optional<Fidelity> mode = fidelity_from_string(fidelity);
  if (!mode) throw ScenarioError("fidelity", fidelity, "must be fast, full or full-per-rank");
  if (s.inference && *mode != Fidelity::fast)
    throw ScenarioError("fidelity", fidelity, "applies to a training step; this scenario is an inference batch");
  py::gil_scoped_release release;
  return simulate_report(s, trace, *mode).dump();
}

std::string memory_json(const std::string& text, const std::vector<std::string>& overrides) {
  return memory_report(load(text, overrides)).dump();
}

std::string search_json(const std::string& text, const std::vector<std::string>& overrides, std::int64_t min_gpus,
                        std::int64_t max_gpus, const std::string& objective, int top, bool simulate,
                        int max_micro_batch) {
  const Scenario s = load(text, overrides);
  SearchOptions o;
  if (!parse_objective(objective, o.objective))
    throw ScenarioError("objective", objective, "must be step_time, cost or tokens_per_s");
  o.space.min_gpus = min_gpus > 0 ? min_gpus : s.plan.world_size();
  o.space.max_gpus = max_gpus > 0 ? max_gpus : o.space.min_gpus;
  o.space.max_micro_batch = max_micro_batch;
  o.top = top;
  o.simulate = simulate;
  py::gil_scoped_release release;
  return to_json(search_plans(s, o), o.objective).dump();
}

std::string recompute_json(const std::string& text, const std::vector<std::string>& overrides,
                           std::int64_t budget_bytes) {
  return to_json(plan_recompute(load(text, overrides), budget_bytes)).dump();
}

// `twinsim capacity --json`, failures included unless `failures` is "none"
std::string capacity_json(const std::string& model, const std::string& gpu, double tokens, double days,
                          double price, std::int64_t seq_len, std::int64_t global_batch, std::int64_t max_gpus,
                          const CapacityFailures& failures) {
  CapacityRequest r;
  r.model = model, r.gpu = gpu, r.tokens = tokens, r.days = days, r.price_per_gpu_hour = price;
  r.seq_len = seq_len, r.global_batch = global_batch, r.max_gpus = max_gpus;
  r.goodput = capacity_goodput(failures, "failures");
  r.model_spec = catalog_model(model), r.node = catalog_cluster_for_gpu(gpu);
  py::gil_scoped_release release;
  return to_json(r, plan_capacity(r)).dump();
}

// What Python's capacity(serve=True) asks: `twinsim capacity --serve`'s options, by name.
struct ServingCapacityArgs {
  double rate = 0, ttft_p99 = 0, tpot_p99 = 0;
  std::int64_t prompt_len = 1024, output_len = 256;
  bool disaggregate = false;
  std::int64_t prefix_tokens = 0;
  double prefix_hit_rate = 1.0;
  std::string speculative;  // inference.speculative as YAML; empty: none
};

// `twinsim capacity --serve --json`: the smallest deployment meeting the p99 targets at the rate
std::string serving_capacity_json(const std::string& model, const std::string& gpu, const ServingCapacityArgs& a) {
  ServingCapacityRequest r;
  r.model = model, r.gpu = gpu, r.rate_per_s = a.rate, r.ttft_p99_s = a.ttft_p99, r.tpot_p99_s = a.tpot_p99;
  r.prompt_len = a.prompt_len, r.output_len = a.output_len;
  r.disaggregate = a.disaggregate, r.prefix_tokens = a.prefix_tokens, r.prefix_hit_rate = a.prefix_hit_rate;
  if (!a.speculative.empty()) r.speculative = speculative_from_text(a.speculative, "speculative");
  r.model_spec = catalog_model(model), r.node = catalog_cluster_for_gpu(gpu);
  py::gil_scoped_release release;
  return to_json(r, plan_serving_capacity(r)).dump();
}

// `twinsim serve --json` on Poisson arrivals, with prefix caching when prefix_tokens > 0
std::string serve_json(const std::string& text, const std::vector<std::string>& overrides, std::int64_t requests,
                       double rate, std::uint64_t seed, std::int64_t prefix_tokens, double prefix_hit_rate,
                       const std::string& router, double swap_space_gib) {
  const Scenario s = load(text, overrides);
  ServeRequest r;
  r.requests = requests, r.rate_per_s = rate, r.seed = seed, r.prefix_hit_rate = prefix_hit_rate;
  r.options.prefix_tokens = prefix_tokens;
  r.options.keep_occupancy = false;
  r.router = router;
  if (!(swap_space_gib >= 0 && swap_space_gib <= 1e6))
    throw ScenarioError("swap_space_gib", std::to_string(swap_space_gib), "must be between 0 and 1e6");
  r.options.swap_space_bytes = swap_space_gib * 1024 * 1024 * 1024;
  if (requests < 1) throw ScenarioError("requests", std::to_string(requests), "must be at least 1");
  if (!(rate >= 1e-6)) throw ScenarioError("rate", std::to_string(rate), "must be at least 1e-6 per second");
  if (prefix_tokens < 0) throw ScenarioError("prefix_tokens", std::to_string(prefix_tokens), "must be >= 0");
  if (!(prefix_hit_rate >= 0 && prefix_hit_rate <= 1))
    throw ScenarioError("prefix_hit_rate", std::to_string(prefix_hit_rate), "must be between 0 and 1");
  py::gil_scoped_release release;
  return run_serve(s, r).json.dump();
}

// compare/ reads both reports as JSON only (it shares no code with sim/ or exec/).
std::string compare_json(const std::string& simulated, const std::string& measured) {
  try {
    return compare::to_json(compare::compare_reports(nlohmann::json::parse(simulated),
                                                     nlohmann::json::parse(measured)))
        .dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("compare: ") + e.what());
  }
}

}  // namespace
}  // namespace twinsim

PYBIND11_MODULE(_core, m) {
  using namespace twinsim;
  m.doc() = "twinsim simulator core (JSON in, JSON out); use the twinsim package";
  static py::exception<ScenarioError> scenario_error(m, "ScenarioError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ScenarioError& e) {
      PyObject* type = scenario_error.ptr();
      py::object instance = py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", e.what()));
      instance.attr("key") = e.key;
      instance.attr("value") = e.value;
      instance.attr("rule") = e.rule;
      PyErr_SetObject(type, instance.ptr());
    }
  });
  m.def("default_scenario_text", &default_scenario_text);
  m.def("memory_categories", [] {  // the report's memory.breakdown keys, in order
    std::vector<std::string> names;
    for (MemCategory c : kMemCategories) names.emplace_back(category_name(c));
    return names;
  });
  m.def("scenario_file_json", &scenario_file_json, py::arg("path"));
  m.def("text_json", &text_json, py::arg("text"));
  m.def("set_json", &set_json, py::arg("text"), py::arg("key"), py::arg("value"));
  m.def("resolved_json", &resolved_json, py::arg("text"), py::arg("overrides"));
  m.def("simulate_json", &simulate_json, py::arg("text"), py::arg("overrides"), py::arg("trace") = "",
        py::arg("fidelity") = "fast");
  m.def("memory_json", &memory_json, py::arg("text"), py::arg("overrides"));
  m.def("search_json", &search_json, py::arg("text"), py::arg("overrides"), py::arg("min_gpus"),
        py::arg("max_gpus"), py::arg("objective"), py::arg("top"), py::arg("simulate"), py::arg("max_micro_batch"));
  m.def("recompute_json", &recompute_json, py::arg("text"), py::arg("overrides"), py::arg("budget_bytes"));
  m.def("capacity_json",
        [](const std::string& model, const std::string& gpu, double tokens, double days, double price,
           std::int64_t seq_len, std::int64_t global_batch, std::int64_t max_gpus, const std::string& failures,
           double storage_GBps, double restart_minutes, double interval_minutes, bool sync_checkpoint) {
          const CapacityFailures f{failures, storage_GBps, restart_minutes, interval_minutes, sync_checkpoint};
          return capacity_json(model, gpu, tokens, days, price, seq_len, global_batch, max_gpus, f);
        },
        py::arg("model"), py::arg("gpu"), py::arg("tokens"), py::arg("days"), py::arg("price"), py::arg("seq_len"),
        py::arg("global_batch"), py::arg("max_gpus"), py::arg("failures") = "llama3-h100",
        py::arg("storage_GBps") = 0.0, py::arg("restart_minutes") = kDefaultRestartMinutes,
        py::arg("interval_minutes") = 0.0, py::arg("sync_checkpoint") = false);
  m.def(
      "serving_capacity_json",
      [](const std::string& model, const std::string& gpu, double rate, double ttft_p99, double tpot_p99,
         std::int64_t prompt_len, std::int64_t output_len, bool disaggregate, std::int64_t prefix_tokens,
         double prefix_hit_rate, const std::string& speculative) {
        return serving_capacity_json(model, gpu,
                                     {rate, ttft_p99, tpot_p99, prompt_len, output_len, disaggregate, prefix_tokens,
                                      prefix_hit_rate, speculative});
      },
      py::arg("model"), py::arg("gpu"), py::arg("rate"), py::arg("ttft_p99"), py::arg("tpot_p99"),
      py::arg("prompt_len"), py::arg("output_len"), py::arg("disaggregate"), py::arg("prefix_tokens"),
      py::arg("prefix_hit_rate"), py::arg("speculative"));
  m.def("serve_json", &serve_json, py::arg("text"), py::arg("overrides"), py::arg("requests"), py::arg("rate"),
        py::arg("seed"), py::arg("prefix_tokens"), py::arg("prefix_hit_rate"), py::arg("router") = "", py::arg("swap_space_gib") = 0.0);
  m.def("compare_json", &compare_json, py::arg("simulated"), py::arg("measured"));
  // a model section's JSON text ({"hf_config": {...}} or an inline mapping), a config.json
  // path or a catalog name -> `twinsim describe-model --json`
  m.def("describe_model_json", [](const std::string& model) {
    const bool text = !model.empty() && model.front() == '{';
    return describe_model(text ? load_model_text(model, "model") : load_model(model)).dump();
  }, py::arg("model"));
  m.def("catalog_model_names", &catalog_model_names);
  m.def("catalog_gpu_names", &catalog_gpu_names);
  // `cluster: host` as the command line reads it (app/host_calibration.hpp): the package names
  // the calibrated host file before each call (api.py, _use_host_calibration)
  m.def("set_host_cluster_file", &set_host_cluster_file, py::arg("file"));
  m.attr("source_tree") = TWINSIM_SOURCE_TREE;  // the repository the module was built from
  m.def("catalog_node_names", &catalog_node_names);
}
