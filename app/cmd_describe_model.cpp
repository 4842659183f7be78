// `twinsim describe-model CONFIG|NAME [--json]`: a Hugging Face config.json (or a catalog
// model) as twinsim maps it, with its parameter counts: check the mapping before pricing.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "scenario/load.hpp"
#include "sim/report/model_description.hpp"

namespace twinsim {

namespace {

struct DescribeArgs {
  std::string model;
  bool json = false;
};

void print_description(std::ostream& out, const nlohmann::json& d) {
  out << "# " << d["name"].get<std::string>() << ": as an inline `model:` mapping\n";
  out << "model: " << d["model"].dump() << "\n";
  char line[160];
  const nlohmann::json& p = d["params"];
  std::snprintf(line, sizeof line, "parameters: %lld total, %lld active per token (embedding %lld, output layer %lld)\n",
                p["total"].get<long long>(), p["active"].get<long long>(), p["embedding"].get<long long>(),
                p["output_layer"].get<long long>());
  out << line;
  if (p["mtp"].get<long long>() > 0) out << "multi-token prediction: " << p["mtp"].get<long long>() << " more\n";
  out << "KV cache: " << d["kv_cache_bytes_per_token_bf16"].get<long long>() << " bytes per token in bf16, all layers\n";
}

}  // namespace

void add_describe_model_command(CLI::App& app) {
  auto args = std::make_shared<DescribeArgs>();
  CLI::App* cmd = app.add_subcommand("describe-model", "show how twinsim reads a Hugging Face config.json or catalog model");
  cmd->add_option("model", args->model, "a config.json file, or a catalog model name")->required();
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args] {
    const nlohmann::json d = describe_model(load_model(args->model));
    if (args->json) std::cout << d.dump(2) << "\n";
    else print_description(std::cout, d);
  });
}

}  // namespace twinsim
