// `twinsim fit-gemm FILE... --gpu NAME --dtype D [--device TEXT...] [--timing kernel|wall]
//                       [--fit even|odd|squares|all] [--json]`
// Fits a catalog GPU's GEMM efficiency curve to measured throughput and prints it as the
// catalog's YAML, with the time errors on the fitted and the held-out shapes, before
// (the GPU's curve as it stands) and after (hardware/catalog/README.md).
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "scenario/load.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {

namespace {

struct Options {
  std::vector<std::string> files, devices;
  std::string gpu, dtype = "bf16", timing = "kernel", fit = "even";
  bool json = false;
};

nlohmann::json to_json(const ErrorSummary& s) {
  return {{"count", s.count}, {"median", s.median}, {"p90", s.p90}, {"max", s.max}, {"mean_signed", s.mean_signed}};
}

void print_row(const std::string& label, const ErrorSummary& s) {
  std::cout << "  " << std::left << std::setw(18) << label << std::right << std::setw(6) << s.count << std::fixed
            << std::setprecision(1) << std::setw(9) << 100 * s.median << std::setw(9) << 100 * s.p90 << std::setw(9)
            << 100 * s.max << std::setw(10) << std::showpos << 100 * s.mean_signed << std::noshowpos << "\n";
}

void run(const Options& o) {
  Dtype dtype{};
  if (!parse_dtype(o.dtype, dtype)) throw std::runtime_error("--dtype " + o.dtype + " is not a math type");
  const GpuSpec gpu = catalog_gpu(o.gpu);
  const std::vector<MeasuredGemm> rows = read_gemm_csvs(o.files, o.devices, dtype);
  const GemmTiming timing = o.timing == "wall" ? GemmTiming::wall : GemmTiming::kernel;
  const GemmFitRows which = o.fit == "odd"       ? GemmFitRows::odd
                            : o.fit == "squares" ? GemmFitRows::squares
                            : o.fit == "all"     ? GemmFitRows::all
                                                 : GemmFitRows::even;
  const GemmFitReport r = fit_and_judge(gpu, rows, timing, which);
  if (o.json) {
    nlohmann::json curve = nlohmann::json::array();
    for (const EfficiencyPoint& p : r.curve) curve.push_back({p.size, p.efficiency});
    nlohmann::json by_source = nlohmann::json::array();
    for (std::size_t i = 0; i < r.held_out_by_source.size(); ++i)
      by_source.push_back({{"file", o.files[i]}, {"held_out", to_json(r.held_out_by_source[i])},
                           {"held_out_before", to_json(r.held_out_before_by_source[i])}});
    std::cout << nlohmann::json{{"file", o.files.front()}, {"files", o.files}, {"held_out_by_file", by_source},
                                {"gpu", o.gpu}, {"dtype", o.dtype}, {"rows", rows.size()},
                                {"curve", curve}, {"fit", to_json(r.fit)}, {"held_out", to_json(r.held_out)},
                                {"fit_before", to_json(r.fit_before)}, {"held_out_before", to_json(r.held_out_before)}}
                     .dump(2)
              << "\n";
    return;
  }
  const bool own_key = has_own_gemm_curve(dtype);
  std::string files, devices;
  for (const std::string& f : o.files) files += f + " ";
  for (const std::string& d : o.devices) devices += " --device " + d;
  std::cout << "# fitted by `twinsim fit-gemm " << files << "--gpu " << o.gpu << " --dtype " << o.dtype << devices
            << " --timing " << o.timing << " --fit " << o.fit
            << "` on " << r.fit.count << " of " << rows.size() << " shapes\n"
            << (own_key ? "gemm_efficiency_by_dtype:\n  " + o.dtype + ": [" : "gemm_efficiency: [");
  for (std::size_t i = 0; i < r.curve.size(); ++i)
    std::cout << (i ? ", " : "") << "[" << std::setprecision(4) << std::scientific << r.curve[i].size << ", "
              << std::fixed << r.curve[i].efficiency << "]";
  std::cout << "]\n\ntime error |predicted - measured| / measured, in %\n  " << std::left << std::setw(18) << "shapes"
            << std::right << std::setw(6) << "n" << std::setw(9) << "median" << std::setw(9) << "p90" << std::setw(9)
            << "max" << std::setw(10) << "bias" << "\n";
  print_row("fit, before", r.fit_before);
  print_row("fit, after", r.fit);
  if (r.held_out.count) {
    print_row("held out, before", r.held_out_before);
    print_row("held out, after", r.held_out);
  }
  for (std::size_t i = 0; o.files.size() > 1 && i < r.held_out_by_source.size(); ++i) {
    if (!r.held_out_by_source[i].count) continue;
    std::cout << "  held out of " << o.files[i] << ":\n";
    print_row("  before", r.held_out_before_by_source[i]);
    print_row("  after", r.held_out_by_source[i]);
  }
}

}  // namespace

void add_fit_gemm_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("fit-gemm", "fit a GPU's GEMM efficiency curve to measured GEMM throughput");
  cmd->add_option("files", o->files, "CSV: gpu,dtype,m,n,k,tflops or XLA's perf-table columns; several pool")
      ->required();
  cmd->add_option("--gpu", o->gpu, "catalog GPU whose peak and SM count the curve is for")->required();
  cmd->add_option("--dtype", o->dtype, "math type of the rows to fit (bf16, fp16, tf32, fp8)")->capture_default_str();
  cmd->add_option("--device", o->devices,
                  "keep rows whose device column contains this text (once for all files, or once per file)");
  cmd->add_option("--timing", o->timing, "kernel: device time per kernel; wall: host time per call (one launch)")
      ->check(CLI::IsMember({"kernel", "wall"}))->capture_default_str();
  cmd->add_option("--fit", o->fit, "rows that fit the curve; the others judge it")
      ->check(CLI::IsMember({"even", "odd", "squares", "all"}))->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON instead of YAML and a table");
  cmd->callback([o] { run(*o); });
}

}  // namespace twinsim
