// `moesim list designs [--json F]`: what can be chosen by name, with one line each.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "reports/design_list.hpp"
#include "reports/output_file.hpp"

namespace moesim::cli {

Runner add_list_command(CLI::App& app) {
  struct Args {
    std::string json_out;
  };
  auto args = std::make_shared<Args>();
  auto* list = app.add_subcommand("list", "list what a scenario can choose by name, with a description of each");
  list->require_subcommand(1);
  auto* designs = list->add_subcommand(
      "designs",
      "every data-parallel design (plan.design and its parts), its planner families and its tasks' strategy");
  designs->add_option("--json", args->json_out, "also write the list as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  return [designs, args]() -> int {
    if (!designs->parsed()) return -1;
    listing_stream({{"--json", &args->json_out}}) << designs_table();
    if (!args->json_out.empty()) write_output(args->json_out, json_text(designs_json()));
    return kExitOk;
  };
}

}  // namespace moesim::cli
