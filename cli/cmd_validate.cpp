// `moesim validate [DATASET...] [--json FILE|-]`: predicted vs published for every record;
// exit 1 when a record without a documented gap is outside its tolerance.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/common/bundled_data.hpp"
#include "models/common/json_file.hpp"
#include "models/common/units.hpp"
#include "models/costs/collective_model.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/input/plan_profile_checks.hpp"
#include "reports/output_file.hpp"
#include "reports/validation_report.hpp"
#include "studies/validation.hpp"

namespace moesim::cli {

namespace {
// A dataset or scenario named relative to the checkout (the defaults are) is found from any
// folder: the current one first, then where the bundled data is (models/common/bundled_data.hpp),
// and when it is nowhere the error lists the folders looked in and how to point at them.
std::string located(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || std::filesystem::path(path).is_absolute()) return path;
  return require_bundled(path);
}
// A kernel record's predicted rate: the profile's cost model on the record's shape, its own FLOP
// count over its time (KernelTime::achieved_TFLOPs: 2 m n k; attention in the causal count, the
// backward 2.5 x forward). A GEMM's "backward" is its input gradient. Published kernel numbers are
// microbenchmarks of a few milliseconds a shape, so they are priced at the profile's short-run
// rates: without compute.gemm_power_limited_TFLOPs, the ceiling a step's back-to-back GEMMs settle
// at under the board's power limit. `loaded` holds the profiles read so far in this run.
// An EP dispatch or combine record's algorithm bandwidth, as DeepEP's and HybridEP's benchmarks
// define it: the BF16 rows a rank receives (one per token per rank holding one of its experts, its
// own included) over the call's time, on `tokens` tokens per rank of `hidden` features.
double ep_algorithm_GBps(const HardwareProfile& hw, const std::string& kernel, const JsonReader& shape) {
  EpTransferRequest r;
  const EpTransport transport = kEpTransportNames.parse(shape.choice_in("transport", kEpTransportNames.names()));
  const double tokens = shape.number("tokens", Range::positive()), hidden = shape.number("hidden", Range::positive());
  r.ranks = static_cast<int>(shape.integer("ranks", Range::between(2, 1 << 16)));
  r.ranks_per_node = static_cast<int>(shape.integer_or("ranks_per_node", 0, Range::between(1, 1 << 16)));
  r.top_k = shape.number("top_k", Range::positive());
  r.experts = shape.number("experts", Range::positive());
  r.sms = static_cast<int>(shape.integer_or("sms", 0, Range::between(1, 1024)));
  r.bytes = tokens * r.top_k * hidden * bytes_of(DType::bf16);
  r.toward_experts = kernel == "ep_dispatch";
  const EpTransferCost c = ep_transport_model(transport).cost(hw, collective_models().get(kDefaultCollectiveModel), r);
  const double received =
      tokens * hidden * bytes_of(DType::bf16) * r.ranks * hit_probability(r.experts, r.experts / r.ranks, r.top_k);
  return received / c.time_s / kGB;
}

double price_kernel(std::map<std::string, HardwareProfile>& loaded, const std::string& profile,
                    const std::string& kernel, const std::string& pass, const JsonReader& shape) {
  auto it = loaded.find(profile);
  if (it == loaded.end()) {
    it = loaded.emplace(profile, parse_hardware_profile(JsonReader(read_json_file(profile), profile, ""))).first;
    it->second.compute.gemm_power_limited_TFLOPs.reset();
  }
  const HardwareProfile& hw = it->second;
  if (kernel.starts_with("ep_")) {
    const double GBps = ep_algorithm_GBps(hw, kernel, shape);
    shape.finish();
    return GBps;
  }
  const bool backward = pass == "backward";
  KernelTime t;
  if (kernel == "gemm") {
    GemmShape g;
    g.m = shape.number("m", Range::positive());
    g.n = shape.number("n", Range::positive());
    g.k = shape.number("k", Range::positive());
    g.pass = backward ? GemmPass::dgrad : GemmPass::forward;
    t = gemm_cost_models().get(kDefaultGemmCost).time(hw, g);
  } else {
    AttentionShape a;
    a.sequences = shape.number("sequences", Range::positive());
    a.seq_len = shape.number("seq_len", Range::positive());
    a.heads = shape.number("heads", Range::positive());
    a.kv_heads = shape.number_or("kv_heads", 0, Range::non_negative());
    a.head_dim = shape.number("head_dim", Range::positive());
    a.v_head_dim = shape.number_or("v_head_dim", 0, Range::non_negative());
    a.causal = shape.boolean_or("causal", true);
    // q, k and v in FP8 / MXFP8: the profile's tables for that format (plan.precision.attention).
    HardwareProfile priced = hw;
    if (!take_attention_format(priced, shape.choice_of("precision", kGemmPrecisionNames, GemmPrecision::bf16)))
      shape.fail("precision", "hardware profile \"" + hw.name + "\" has no such attention rates");
    const AttentionTime both = attention_cost_models().get(kDefaultAttentionCost).time(priced, a);
    t = backward ? both.backward : both.forward;
  }
  shape.finish();
  return t.achieved_TFLOPs;
}
}  // namespace

Runner add_validate_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> datasets, sets;
    std::string json_out, sensitivity_scenario = "scenarios/fig8/fig8b.json";
    double sensitivity = 0;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("validate", "simulate validation datasets and compare with published measurements");
  sub->add_option("datasets", args->datasets,
                  "dataset files (default: scenarios/validation/seed.json, a100.json and h100.json)");
  sub->add_option("--json", args->json_out, "write the report as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--set", args->sets,
                  "override a field in every record's scenario (sensitivity studies), e.g. "
                  "hardware.interference.compute_slowdown_with_comm.value=0.3");
  auto* sensitivity_option =
      sub->add_option(
             "--sensitivity", args->sensitivity,
             "instead of one report, scale every assumed number of the hardware profile by 1 -+ FRACTION and print a "
             "table")
          ->check(fraction_up_to(0.9));  // 0 scales nothing: it printed the plain report instead
  sub->add_option("--sensitivity-scenario", args->sensitivity_scenario,
                  "scenario whose hardware profile lists the assumptions")
      ->needs(sensitivity_option);  // without it the scenario would be ignored
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_stream({{"--json", &args->json_out}});
    std::vector<std::string> datasets = args->datasets;
    // --sensitivity scales the sensitivity scenario's profile numbers in every record: by default
    // only the seed dataset, whose records run on that profile (the A100 records run on another).
    if (datasets.empty() && args->sensitivity > 0) datasets = {default_validation_datasets().front()};
    if (datasets.empty()) datasets = default_validation_datasets();
    for (auto& file : datasets) file = located(file);
    if (args->sensitivity > 0) {
      const std::string scenario = located(args->sensitivity_scenario);
      for (const auto& file : datasets)
        std::cout << "\ndataset " << file << "\n\n"
                  << sensitivity_table(sensitivity(file, scenario, args->sensitivity), args->sensitivity);
      return 0;
    }
    nlohmann::json all = nlohmann::json::array();
    std::size_t failures = 0;
    std::map<std::string, HardwareProfile> profiles;  // read once, for the kernel records
    for (const auto& file : datasets) {
      const ValidationReport report =
          validate_dataset(file, args->sets,
                           [&profiles](const std::string& p, const std::string& k, const std::string& pass,
                                       const JsonReader& shape) { return price_kernel(profiles, p, k, pass, shape); });
      listing << validation_table(report);
      all.push_back(validation_json(report));
      failures += report.failures();
    }
    if (!args->json_out.empty()) write_output(args->json_out, json_text(all.size() == 1 ? all.front() : all));
    return failures == 0 ? 0 : 1;
  };
}

}  // namespace moesim::cli
