// `moesim list designs|stacks [--json F]`: what can be chosen by name, with one line each.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "reports/design_list.hpp"
#include "reports/output_file.hpp"
#include "reports/stack_report.hpp"

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
  auto* stacks = list->add_subcommand(
      "stacks",
      "every training-stack preset (plan.stack): the plan keys it sets, each with its source in the stack's code");
  stacks->add_option("--json", args->json_out, "also write the list as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  return [designs, stacks, args]() -> int {
    const bool designs_listed = designs->parsed();
    if (!designs_listed && !stacks->parsed()) return -1;
    listing_stream({{"--json", &args->json_out}}) << (designs_listed ? designs_table() : stacks_table());
    if (!args->json_out.empty()) {
      write_output(args->json_out, json_text(designs_listed ? designs_json() : stacks_json()));
    }
    return kExitOk;
  };
}

}  // namespace moesim::cli
