// Sub-commands of `moesim`. Each registers its options on the app and returns its runner.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/hw/profile_lookup.hpp"

namespace moesim::cli {

using Runner = std::function<int()>;

inline constexpr const char* kProfileOptionHelp =
    "hardware profile: a bundled profile's name (b300-hgx, h200-hgx, ...: hardware_profiles/NAME.json) or a "
    "profile JSON file";

// `--profile NAME|FILE` on a command that reads a scenario: the profile replaces the scenario's
// hardware section before any --set applies. Add it after --set: CLI11 runs option callbacks in
// the order the options were added, so `sets` already holds the --set values here.
inline void add_profile_option(CLI::App* sub, std::vector<std::string>& sets) {
  sub->add_option_function<std::string>(
      "--profile",
      [&sets](const std::string& argument) {
        const std::string file = std::filesystem::absolute(resolve_profile(argument)).lexically_normal().string();
        sets.insert(sets.begin(), "hardware=" + nlohmann::json(file).dump());
      },
      kProfileOptionHelp);
}

Runner add_help_command(CLI::App& app);
Runner add_ledger_command(CLI::App& app);
Runner add_inventory_command(CLI::App& app);
Runner add_simulate_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_cost_command(CLI::App& app);
Runner add_fit_command(CLI::App& app);
// `fit runs`, a subcommand of `fit` (cmd_fit_runs.cpp).
Runner add_fit_runs_command(CLI::App& fit);
Runner add_import_command(CLI::App& app);
// `import trainer-log`, a subcommand of `import` (cmd_import_trainer_log.cpp).
Runner add_import_trainer_log_command(CLI::App& import);
Runner add_plan_command(CLI::App& app);
// `list designs` (cmd_list.cpp).
Runner add_list_command(CLI::App& app);
Runner add_profile_command(CLI::App& app);

}  // namespace moesim::cli
