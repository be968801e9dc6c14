#include "fuzz/entries.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "calibrate/fit/fitter.hpp"
#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/nccl_tests_import.hpp"
#include "fuzz/plan_space.hpp"
#include "models/arch/flops.hpp"
#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "models/memory/ledger.hpp"
#include "reports/output_file.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_simulation.hpp"
#include "studies/sweep.hpp"

namespace moesim::fuzz {

namespace {

const std::string kSource = MOESIM_SOURCE_DIR;
// The base of the override and profile targets: the seed's Figure 8 DDP+EP8 point.
const std::string kBaseScenario = kSource + "/scenarios/fig8/moe-ddp-ep8.json";
const std::string kBaseProfile = kSource + "/hardware_profiles/b300-hgx.json";

// Work on a simulated step is bounded so that every input runs in well under libFuzzer's 1 s
// hang limit under the sanitizers: layers x microbatches x virtual stages x simulated ranks
// decides the task count of the replay. (A campaign input with 207,488 tasks on 64 simulated
// ranks took 70 ms in a Release build but over 1 s instrumented.)
constexpr double kMaxReplayWork = 4096;

// What the input meant, printed with a finding (the plan-space target's overrides).
std::string g_context;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "moesim fuzz finding: %s\n%s", what.c_str(), g_context.c_str());
  std::fflush(stderr);
  std::abort();
}

// Accepted input or an InputError: both fine. Any other exception escapes and is a finding.
template <typename F>
void refused_or_accepted(F&& body) {
  try {
    body();
  } catch (const InputError& e) {
    if (e.message().empty()) finding("InputError without a message");
  }
}

void check_step(const StepResult& r) {
  if (const std::string problem = step_output_problem(r); !problem.empty()) finding(problem);
}

// Ledger for any accepted scenario; the replay too when its size keeps the input fast.
void exercise(const Scenario& s) {
  const Inventory inv = build_inventory(s.arch);
  flop_conventions().get(s.flop_convention).per_token(s.arch, inv);
  scenario_ledger(s, inv);
  const BatchShape shape = batch_shape(s.plan, s.arch);
  const double simulated_ranks =
      static_cast<double>(s.plan.pp * simulated_ranks_per_stage(s.arch, s.plan, SimOptions{}));
  const double work = static_cast<double>(s.arch.num_layers) * static_cast<double>(shape.microbatches) *
                      static_cast<double>(std::max<std::int64_t>(1, s.plan.pp_virtual)) * simulated_ranks;
  if (work > kMaxReplayWork) return;
  check_step(simulate(s, SimOptions{}).result);
}

// A fixed private folder for the inputs that the CLI reads from files.
const std::string& scratch_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("moesim-fuzz." + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

std::string scratch_file(const std::string& name, std::string_view data) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

std::vector<std::string> lines_of(std::string_view data) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= data.size()) {
    const std::size_t end = std::min(data.find('\n', start), data.size());
    if (end > start) out.emplace_back(data.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

std::string step_output_problem(const StepResult& r) {
  if (!(std::isfinite(r.step_time_s) && r.step_time_s > 0)) return "step time not finite and positive";
  if (!(std::isfinite(r.tokens_per_s_per_gpu) && r.tokens_per_s_per_gpu > 0))
    return "tokens/s/GPU not finite and positive";
  if (!(std::isfinite(r.mfu) && r.mfu > 0 && r.mfu <= 1)) return "MFU outside (0, 1]: " + std::to_string(r.mfu);
  for (double v : r.exposed_s)
    if (!finite_nonneg(v)) return "exposed time not finite";
  if (!finite_nonneg(r.idle_s)) return "idle time not finite";
  for (const auto& by_link : r.bytes_per_rank)
    for (double v : by_link)
      if (!finite_nonneg(v)) return "bytes per rank not finite";
  if (!(r.dropped_fraction >= 0 && r.dropped_fraction <= 1)) return "dropped fraction outside [0, 1]";
  if (r.ledger.stages.empty()) return "no memory ledger";
  for (const auto& st : r.ledger.stages) {
    if (!finite_nonneg(st.device_total) || !finite_nonneg(st.peak_allocated) || !std::isfinite(st.headroom))
      return "ledger bytes not finite";
  }
  return "";
}

void scenario_input(std::string_view data) {
  // Placed beside the Figure 8 scenarios so that their relative section paths resolve.
  const std::string file = kSource + "/scenarios/fig8/fuzz-input.json";
  refused_or_accepted(
      [&] { exercise(compose(read_scenario_document(parse_json_text(std::string(data), file), file, {}))); });
}

void profile_input(std::string_view data) {
  refused_or_accepted([&] {
    // The profile inline in the seed's scenario: parsed as a profile, and an accepted one must
    // give sane numbers there.
    nlohmann::json scenario = read_json_file(kBaseScenario);
    scenario["hardware"] = parse_json_text(std::string(data), "fuzz-profile.json");
    exercise(compose(read_scenario_document(scenario, kBaseScenario, {})));
  });
}

void overrides_input(std::string_view data) {
  // One expression per line: "vary PATH=VALUES" is a sweep axis, anything else a --set.
  std::vector<std::string> sets;
  SweepSpec spec;
  refused_or_accepted([&] {
    for (const auto& line : lines_of(data)) {
      if (line.rfind("vary ", 0) == 0) {
        spec.axes.push_back(parse_axis(line.substr(5)));
      } else {
        sets.push_back(line);
      }
    }
    const ScenarioSource source = read_scenario(kBaseScenario, sets);
    exercise(compose(source));
    const auto points = expand_points(source, spec);
    const std::size_t first_points = std::min<std::size_t>(points.size(), 2);
    const SweepResult r = run_points(source, points, 0, first_points, 1, nullptr);
    for (const auto& p : r.points) {
      if (p.ok)
        check_step(*p.result);
      else if (p.error.empty())
        finding("sweep point refused without a reason");
    }
  });
}

void measurements_input(std::string_view data) {
  const std::string file = scratch_file("measurements.json", data);
  refused_or_accepted([&] { fit::format_fit_table(fit::fit_profile({file}, kBaseProfile, fit::FitOptions{})); });
}

void nccl_tests_input(std::string_view data) {
  refused_or_accepted([&] {
    const auto log = fit::parse_nccl_tests_log(std::string(data), "fuzz.log", fit::NcclTestsOptions{});
    const auto doc = fit::nccl_tests_document({log}, {"moesim", "import", "nccl-tests", "fuzz.log"});
    // What `moesim import` writes (the same text) must read back as a valid measurement file.
    try {
      fit::parse_measurements(nlohmann::json::parse(json_text(doc)), "imported.json");
    } catch (const InputError& e) {
      finding(std::string("the importer wrote a measurement file its reader refuses: ") + e.what());
    }
  });
}

void plan_space_input(std::string_view data) {
  const std::vector<std::string> sets = plan_space_overrides(data);
  g_context.clear();
  for (const auto& x : sets) g_context += "  --set " + x + "\n";
  refused_or_accepted([&] { exercise(load_scenario(kBaseScenario, sets)); });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"scenario", scenario_input},         {"profile", profile_input},       {"overrides", overrides_input},
      {"measurements", measurements_input}, {"nccl_tests", nccl_tests_input}, {"plan_space", plan_space_input},
  };
  return all;
}

}  // namespace moesim::fuzz
