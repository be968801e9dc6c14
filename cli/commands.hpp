// Sub-commands of `moesim`. Each registers its options on the app and returns its runner.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace moesim::cli {

using Runner = std::function<int()>;

Runner add_ledger_command(CLI::App& app);
Runner add_inventory_command(CLI::App& app);
Runner add_simulate_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_cost_command(CLI::App& app);
Runner add_fit_command(CLI::App& app);
Runner add_import_command(CLI::App& app);

}  // namespace moesim::cli
