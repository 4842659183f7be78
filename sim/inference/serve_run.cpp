#include "sim/inference/serve_run.hpp"

#include "scenario/errors.hpp"
#include "sim/inference/requests.hpp"

namespace twinsim {

ServeRun run_serve(const Scenario& s, const ServeRequest& r) {
  if (!s.inference) throw ScenarioError("inference", "", "serve needs a scenario with an inference section");
  ServeOptions options = r.options;
  if (options.prefix_tokens > 0) options.prefix_hit_rate = r.prefix_hit_rate;
  options.prefix_seed = r.seed;
  options.acceptance_seed = r.seed;  // inference.speculative's draws
  const std::vector<Request> requests =
      r.trace_file.empty()
          ? poisson_requests(r.requests, r.rate_per_s, r.seed, s.inference->prompt_len, s.inference->output_len)
          : read_request_trace(r.trace_file);
  ServeRun run;
  run.result = simulate_serving(s, requests, options);
  run.summary = summarize(run.result);
  run.json = to_json(run.summary, run.result);
  run.json["arrivals"] = r.trace_file.empty()
                             ? nlohmann::json{{"poisson_rate_per_s", r.rate_per_s}, {"seed", r.seed}}
                             : nlohmann::json{{"trace_file", r.trace_file}};
  return run;
}

}  // namespace twinsim
