// `moesim import nccl-tests LOG... -o MEASUREMENTS [--kind K] [--ranks N] [--algorithm A]` (and
// `moesim import trainer-log`, cmd_import_trainer_log.cpp):
// nccl-tests text output -> one moesim-measurements/1 file (calibrate/README.md). The file is
// written only when every log parsed and the document reads back under the strict reader.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/nccl_tests_import.hpp"
#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/cost_types.hpp"
#include "reports/output_file.hpp"

namespace moesim::cli {

namespace {
struct ImportArgs {
  std::vector<std::string> logs;
  std::string output, kind, algorithm;
  int ranks = 0;
};

int run_import(const ImportArgs& a) {
  // "alltoall" (the nccl-tests binary's name) is all_to_all.
  const std::string kind = a.kind.empty() ? "" : std::string(name_of(parse_collective_kind(a.kind)));
  fit::NcclTestsOptions opts{kind, a.ranks, a.algorithm};
  std::vector<fit::NcclTestsLog> logs;
  for (const auto& path : a.logs) {
    auto tests = fit::read_nccl_tests_log(path, opts);
    logs.insert(logs.end(), tests.begin(), tests.end());
  }
  std::vector<std::string> cmd = {"moesim", "import", "nccl-tests"};
  cmd.insert(cmd.end(), a.logs.begin(), a.logs.end());
  cmd.insert(cmd.end(), {"-o", a.output});
  if (!a.kind.empty()) cmd.insert(cmd.end(), {"--kind", a.kind});
  if (a.ranks > 0) cmd.insert(cmd.end(), {"--ranks", std::to_string(a.ranks)});
  if (!a.algorithm.empty()) cmd.insert(cmd.end(), {"--algorithm", a.algorithm});
  const auto doc = fit::nccl_tests_document(logs, cmd);
  const std::string text = json_text(doc);
  fit::parse_measurements(nlohmann::json::parse(text), a.output);  // what we write must read back
  write_output(a.output, text);
  std::ostream& out = listing_stream({{"--output", &a.output}});
  for (const auto& log : logs) {
    for (const auto& note : log.notes) std::cerr << "moesim import: note: " << note << "\n";
    out << log.file;
    if (log.tests > 1) out << " test " << log.test << " (line " << log.first_line << ")";
    out << ": " << log.kind << " (from " << log.kind_from << "), " << log.ranks << " ranks on "
        << std::max<std::size_t>(1, log.hosts.size()) << " host(s), " << log.rows.size() << " sizes, algorithm "
        << (log.algorithm.empty() ? "not recorded" : log.algorithm) << ", NCCL "
        << (log.nccl_version.empty() ? "version not recorded" : log.nccl_version) << "\n";
  }
  if (!is_standard_output(a.output)) out << "moesim import: wrote " << a.output << "\n";
  return 0;
}
}  // namespace

Runner add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  auto* imp = app.add_subcommand("import", "convert benchmark or trainer output into a measurements or runs file");
  imp->require_subcommand(1);
  auto* nt = imp->add_subcommand("nccl-tests", "nccl-tests logs (all_reduce_perf, all_gather_perf, ...)");
  nt->add_option("logs", args->logs, "nccl-tests output files")->required();
  nt->add_option("-o,--output", args->output, "moesim-measurements/1 file to write ('-': stdout)")
      ->check(output_path())
      ->required();
  nt->add_option("--kind", args->kind, "collective, when the log does not say")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "alltoall", "send_recv"}));
  nt->add_option("--ranks", args->ranks, "group size, when the log has no '# Using devices' lines")
      ->check(positive_number());
  nt->add_option("--algorithm", args->algorithm, "NCCL algorithm the run was pinned to (NCCL_ALGO)")
      ->check(CLI::IsMember({"ring", "tree", "nvls", "nvls_tree"}));
  const Runner trainer_log = add_import_trainer_log_command(*imp);
  return [=]() -> int {
    if (const int rc = trainer_log(); rc >= 0) return rc;
    if (!nt->parsed()) return -1;
    return run_import(*args);
  };
}

}  // namespace moesim::cli
