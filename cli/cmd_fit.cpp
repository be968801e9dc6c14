// `moesim fit MEASUREMENTS... --base PROFILE -o PROFILE`: least-squares calibration of a hardware
// profile from measurement files (calibrate/README.md). Prints the fitted curves and their
// residuals; writes the profile only when every file parsed and the result validates.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/fit/fitter.hpp"
#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/errors.hpp"
#include "models/common/units.hpp"
#include "reports/output_file.hpp"

namespace moesim::cli {

namespace {
struct FitArgs {
  std::vector<std::string> files;
  std::string base, output;
  fit::FitOptions options;
  double hbm_min_MiB = fit::FitOptions{}.hbm_min_bytes / kMiB;
};

int run_fit(FitArgs a) {
  // Required unless `fit runs` was given (CLI11 checks a parent's required options after a subcommand too).
  if (a.files.empty()) throw InputError("moesim fit", "", "MEASUREMENTS are required (or: moesim fit runs RUNS ...)");
  if (a.base.empty()) throw InputError("moesim fit", "--base", "required: the profile whose fields are replaced");
  if (a.output.empty()) throw InputError("moesim fit", "--output", "required: the fitted profile to write");
  a.options.hbm_min_bytes = a.hbm_min_MiB * kMiB;
  const fit::FitResult r = fit::fit_profile(a.files, a.base, a.options);
  std::ostream& table = listing_stream({{"--output", &a.output}});
  table << fit::format_fit_table(r);
  write_output(a.output, json_text(r.profile));
  if (!is_standard_output(a.output)) {
    table << "moesim fit: " << r.updates.size() << " fields fitted; wrote " << a.output << "\n";
  }
  table << std::flush;  // the warnings follow the table, also when both reach one terminal
  for (const auto& w : r.warnings) std::cerr << "moesim fit: warning: " << w << "\n";
  return 0;
}
}  // namespace

Runner add_fit_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  auto* sub = app.add_subcommand("fit",
                                 "fit a hardware profile to measurement files (harness or nccl-tests import); "
                                 "`fit runs`: to measured runs of your own trainer");
  sub->add_option("measurements", args->files, "moesim-measurements/1 and moesim-sustained-gemm/1 files (required)");
  sub->add_option("--base", args->base, "profile whose fields are replaced, e.g. hardware_profiles/h200-hgx.json");
  sub->add_option("-o,--output", args->output, "fitted profile to write ('-': stdout)")->check(output_path());
  sub->add_option("--all-reduce-algorithm", args->options.all_reduce_algorithm,
                  "NCCL algorithm behind all_reduce sweeps that do not record one")
      ->check(CLI::IsMember({"ring", "tree", "nvls", "nvls_tree"}));
  sub->add_option("--gemm-min-nk", args->options.gemm_min_nk,
                  "dense GEMMs with N and K at least this build the table (4096)")
      ->check(positive_number());
  sub->add_flag("--force-device", args->options.force_device,
                "fit measurements taken on another GPU than --base's (refused otherwise)");
  sub->add_option("--hbm-min-MiB", args->hbm_min_MiB, "memory-kernel sizes at least this count for HBM (256)")
      ->check(positive_number());
  const Runner runs = add_fit_runs_command(*sub);
  return [=]() -> int {
    if (!sub->parsed()) return -1;
    if (const int rc = runs(); rc >= 0) return rc;
    return run_fit(*args);
  };
}

}  // namespace moesim::cli
