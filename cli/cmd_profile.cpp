// `moesim profile show NAME|FILE [--full] [--json F]`: a hardware profile's numbers and where each
// comes from.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/hw/profile_provenance.hpp"
#include "reports/output_file.hpp"
#include "reports/profile_report.hpp"

namespace moesim::cli {

namespace {
// Source texts run to several hundred characters; a terminal row shows the start of each.
constexpr std::size_t kSourceWidth = 100;
}  // namespace

Runner add_profile_command(CLI::App& app) {
  struct Args {
    std::string profile, json_out;
    bool full = false;
  };
  auto args = std::make_shared<Args>();
  auto* profile = app.add_subcommand("profile", "what a hardware profile holds");
  profile->require_subcommand(1);
  auto* show = profile->add_subcommand(
      "show",
      "every field with its value, provenance kind and source; counts per kind; what the dominant kernels "
      "(dense GEMM, grouped GEMM, attention) rest on");
  show->add_option("profile", args->profile, kProfileOptionHelp)->required();
  show->add_flag("--full", args->full, "print every source whole (default: the first 100 characters)");
  show->add_option("--json", args->json_out, "also write the listing as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  return [show, args]() -> int {
    if (!show->parsed()) return -1;
    const std::string file = resolve_profile(args->profile);
    const nlohmann::ordered_json doc = read_ordered_json_file(file);
    // A bad profile is refused with its path before anything is listed.
    parse_hardware_profile(JsonReader(nlohmann::json::parse(doc.dump()), file, ""));
    const auto p = profile_provenance(doc, file);
    listing_stream({{"--json", &args->json_out}}) << profile_provenance_table(*p, args->full ? 0 : kSourceWidth);
    if (!args->json_out.empty()) write_output(args->json_out, json_text(profile_provenance_json(*p)));
    return kExitOk;
  };
}

}  // namespace moesim::cli
