// The `moesim` command: the one place that knows every other folder. Library code throws; here
// errors become exit codes: 2 for bad input (file, JSON path, what is allowed), 1 for I/O.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(MOESIM_WITH_MIMALLOC)
#include <mimalloc.h>
#endif

#include "cli/commands.hpp"
#include "cli/parse_errors.hpp"
#include "models/common/errors.hpp"
#include "models/common/registry.hpp"
#include "reports/output_file.hpp"

namespace {
// Each simulated step allocates and frees tens of MiB of task and event arrays. glibc would
// hand large blocks back to the kernel (mmap per block, trim on free) and fault the pages in
// again on the next step, which costs more than the simulation itself; keep them instead.
// Only the C library's malloc reads these: an executable linked with mimalloc (cli/CMakeLists.txt)
// makes them no-ops (the 4096-GPU bench measured the same either way; README Speed).
void keep_freed_memory() {
#if defined(__GLIBC__)
  constexpr int kOneGiB = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kOneGiB);
  mallopt(M_TRIM_THRESHOLD, kOneGiB);
  mallopt(M_TOP_PAD, kOneGiB / 4);
#endif
}

// `moesim --version` names the allocator the executable was linked with (it moves sweep speed).
std::string version_text() {
  std::string text = "moesim 0.1.0";
#if defined(MOESIM_WITH_MIMALLOC)
  const int v = mi_version();  // major * 100 + minor * 10 + patch
  text += " (malloc: mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
          std::to_string(v % 10) + ")";
#else
  text += " (malloc: the C library's)";
#endif
  return text;
}
}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  moesim::remove_partial_outputs_on_signal();
  CLI::App app{"moesim: discrete-event simulator and cost model for MoE and dense LLM training steps"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  std::vector<moesim::cli::Runner> runners = {
      moesim::cli::add_ledger_command(app),   moesim::cli::add_inventory_command(app),
      moesim::cli::add_simulate_command(app), moesim::cli::add_bench_command(app),
      moesim::cli::add_sweep_command(app),    moesim::cli::add_compare_command(app),
      moesim::cli::add_validate_command(app), moesim::cli::add_cost_command(app),
      moesim::cli::add_fit_command(app),      moesim::cli::add_import_command(app),
      moesim::cli::add_plan_command(app),     moesim::cli::add_list_command(app),
      moesim::cli::add_profile_command(app),  moesim::cli::add_help_command(app),
  };
  try {
    // Inside the try: option callbacks (--profile NAME) throw InputError too.
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const std::string explained = e.get_exit_code() == 0 ? "" : moesim::cli::explain_parse_error(app, argc, argv, e);
      if (explained.empty()) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
      }
      std::cerr << "moesim: error: " << explained << "\n";
      return 2;
    }
    for (const auto& run : runners) {
      const int rc = run();
      if (rc >= 0) return rc;
    }
    return 0;
  } catch (const moesim::InputError& e) {
    std::cerr << "moesim: error: " << e.what() << "\n";
    return 2;
  } catch (const moesim::UnknownNameError& e) {
    std::cerr << "moesim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "moesim: error: " << e.what() << "\n";
    return 1;
  }
}
