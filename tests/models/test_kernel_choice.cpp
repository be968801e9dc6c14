// The kernels a plan's stack calls, priced from the profile's rates for them
// (plan.kernels.attention, compute.attention_by_kernel), and the power-limited GEMM ceiling
// (compute.gemm_power_limited_TFLOPs): the composed profile carries the chosen kernel's rates and
// provenance, a kernel without rates is refused where the plan names it and falls back, said,
// where its stack chose it; the profile fields are checked by path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/input/scenario.hpp"
#include "reports/stack_report.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kDense = "scenarios/fig8/dense-ddp.json";

Scenario dense_on(const std::string& profile, std::vector<std::string> sets = {}) {
  sets.insert(sets.begin(), "hardware=../../hardware_profiles/" + profile);
  return load_scenario(test::source_path(kDense), sets);
}

// Parses the bundled `file` after `edit`; returns the path of the InputError it raises ("" if none).
template <class Edit>
std::string profile_error(const std::string& file, Edit edit) {
  json doc = read_json_file(test::source_path("hardware_profiles/" + file));
  edit(doc);
  try {
    parse_hardware_profile(JsonReader(doc, file, ""));
  } catch (const InputError& e) {
    return e.path();
  }
  return "";
}

const json kRate = {{"value", 300}, {"kind", "assumption"}, {"source", "test"}};
}  // namespace

TEST_CASE("a plan's attention kernel is priced at the profile's rates for that kernel", "[unit]") {
  const Scenario best = dense_on("h100-hgx.json");
  CHECK(best.plan.attention_kernel == AttentionKernel::profile);
  CHECK(best.hardware.compute.attention_fwd_TFLOPs.value == Approx(523.5));  // cuDNN, FA3 paper
  const Scenario fa2 = dense_on("h100-hgx.json", {"plan.kernels={\"attention\": \"flash_attn_2\"}"});
  CHECK(fa2.plan.attention_kernel == AttentionKernel::flash_attn_2);
  CHECK(fa2.hardware.compute.attention_kernel == AttentionKernel::flash_attn_2);
  CHECK(fa2.hardware.compute.attention_fwd_TFLOPs.value == Approx(326));
  CHECK(fa2.hardware.compute.attention_bwd_TFLOPs.value == Approx(277.5));
  // The provenance travels with the rate: reports and the assumption warning read the kernel run.
  CHECK(fa2.hardware.compute.attention_fwd_TFLOPs.source.find("FlashAttention-2") != std::string::npos);
  // The attention kernels' times scale by the rates (compute-bound at these shapes).
  const AttentionShape shape{1, 4096, 32, 8, 128, true};
  const auto& flash = attention_cost_models().get("flash");
  const AttentionTime slow = flash.time(fa2.hardware, shape), fast = flash.time(best.hardware, shape);
  CHECK(slow.forward.rate_TFLOPs == Approx(326));
  CHECK(slow.backward.rate_TFLOPs == Approx(277.5));
  CHECK(slow.forward.time_s / fast.forward.time_s == Approx(518.0 / 326).epsilon(0.02));
  CHECK(slow.backward.time_s / fast.backward.time_s == Approx(424.4 / 277.5).epsilon(0.02));
}

TEST_CASE("naming the kernel the profile's own rates measure keeps them", "[unit]") {
  const Scenario a100 = dense_on("a100-sxm-80gb.json", {"plan.kernels={\"attention\": \"flash_attn_2\"}"});
  CHECK(a100.hardware.compute.attention_fwd_TFLOPs.value == 198);
  CHECK(a100.hardware.compute.attention_bwd_TFLOPs.value == 171);
}

TEST_CASE("a kernel the profile has no rates for is refused at plan.kernels.attention", "[unit]") {
  try {
    dense_on("b300-hgx.json", {"plan.kernels={\"attention\": \"flash_attn_2\"}"});
    FAIL("flash_attn_2 accepted on a profile without its rates");
  } catch (const InputError& e) {
    CHECK(e.path() == "plan.kernels.attention");
    CHECK(e.infeasible());
    const std::string message = e.what();
    CHECK(message.find("b300-hgx") != std::string::npos);
    CHECK(message.find("allowed here: profile") != std::string::npos);
  }
  CHECK_THROWS_AS(dense_on("h100-hgx.json", {"plan.kernels={\"attention\": \"flash_attn_4\"}"}), InputError);
}

TEST_CASE("the composer stack calls FlashAttention-2, without its rates the profile's are used and said so", "[unit]") {
  const auto stacked = [](const std::string& profile) {
    return dense_on(profile, {"plan.stack=\"composer\"", "plan.activations={\"recompute\": \"none\"}",
                              "plan.optimizer={\"type\": \"adamw\"}"});
  };
  const Scenario h100 = stacked("h100-hgx.json");
  CHECK(h100.plan.attention_kernel == AttentionKernel::flash_attn_2);
  CHECK(h100.hardware.compute.attention_fwd_TFLOPs.value == Approx(326));
  const Scenario b300 = stacked("b300-hgx.json");
  CHECK(b300.plan.attention_kernel == AttentionKernel::profile);
  CHECK(b300.hardware.compute.attention_fwd_TFLOPs.value == 1100);
  const auto taken = std::find_if(b300.stack.taken.begin(), b300.stack.taken.end(),
                                  [](const StackSetting& t) { return t.path == "kernels.attention"; });
  REQUIRE(taken != b300.stack.taken.end());
  CHECK(taken->note ==
        "no flash_attn_2 rates in hardware profile \"b300-hgx\" (compute.attention_by_kernel): priced at "
        "the profile's attention rates");
  CHECK(stack_line(b300.stack).find("\n         kernels.attention: no flash_attn_2 rates") != std::string::npos);
  CHECK(stack_json(b300.stack).at("taken").dump().find("\"note\"") != std::string::npos);
  CHECK(stack_json(h100.stack).at("taken").dump().find("\"note\"") == std::string::npos);
  // The stack's own value written into the plan (as `compare --stack` does) is still the stack's.
  const Scenario written = dense_on(
      "b300-hgx.json", {"plan.stack=\"composer\"", "plan.activations={\"recompute\": \"none\"}",
                        "plan.optimizer={\"type\": \"adamw\"}", "plan.kernels={\"attention\": \"flash_attn_2\"}"});
  CHECK(written.plan.attention_kernel == AttentionKernel::profile);
  CHECK(std::any_of(written.stack.taken.begin(), written.stack.taken.end(), [](const StackSetting& t) {
    return t.path == "kernels.attention" && t.note.find("priced at the profile's attention rates") != std::string::npos;
  }));
  // Another stack's plan asking for it is refused as any plan is.
  CHECK_THROWS_AS(
      dense_on("b300-hgx.json", {"plan.stack=\"torchtitan\"", "plan.kernels={\"attention\": \"flash_attn_2\"}"}),
      InputError);
}

TEST_CASE("the power-limited rate caps the dense GEMM table, shapes under it keep theirs", "[unit]") {
  // The H200's profile with the rate its 90 s run settled at (calibrate/measured/h200-2026-12-04/
  // sustained-gemm-h200.json; the bundled profile leaves it out: calibrate/measured/.../README.md).
  json doc = read_json_file(test::source_path("hardware_profiles/h200-hgx.json"));
  doc["compute"]["gemm_power_limited_TFLOPs"] = {{"value", 658}, {"kind", "fitted"}, {"source", "test"}};
  const HardwareProfile limited = parse_hardware_profile(JsonReader(doc, "h200-limited.json", ""));
  const HardwareProfile burst = test::bundled_profile("h200-hgx.json");
  CHECK_FALSE(burst.compute.gemm_power_limited_TFLOPs);
  CHECK(dense_gemm_rate_TFLOPs(burst, 8192) == Approx(764.6));
  CHECK(dense_gemm_rate_TFLOPs(limited, 8192) == 658);
  CHECK(dense_gemm_rate_TFLOPs(limited, 65536) == 658);
  CHECK(dense_gemm_rate_TFLOPs(limited, 256) == Approx(582.2));  // small-M tiles stay under the limit
  const GemmShape big{8192, 8192, 8192};
  const double t = gemm_cost_models().get("table").time(limited, big).time_s;
  const double launch = limited.compute.kernel_launch_us.value * 1e-6;
  CHECK(t - launch == Approx(2.0 * 8192.0 * 8192.0 * 8192.0 / (658 * 1e12)).epsilon(1e-9));
  // The grouped GEMMs follow: their rate is a fraction of the dense rate at the total rows.
  const std::vector<double> rows(8, 8192);
  const GroupedGemmShape grouped{rows, 4096, 4096};
  const auto& table = grouped_gemm_cost_models().get("table");
  CHECK(table.time(limited, grouped).time_s > table.time(burst, grouped).time_s);
}

TEST_CASE("the kernel and power-limit fields are checked by path", "[unit]") {
  CHECK(profile_error("h100-hgx.json", [](json&) {}).empty());
  // The default kernel listed again among the others.
  CHECK(profile_error("h100-hgx.json", [](json& d) { d["compute"]["attention_kernel"] = "flash_attn_2"; }) ==
        "compute.attention_by_kernel.flash_attn_2");
  CHECK(profile_error("h100-hgx.json", [](json& d) {
          d["compute"]["attention_by_kernel"]["flash_attn_4"] = {{"fwd_TFLOPs", kRate}, {"bwd_TFLOPs", kRate}};
        }) == "compute.attention_by_kernel.flash_attn_4");
  CHECK(profile_error("h100-hgx.json", [](json& d) { d["compute"]["attention_kernel"] = "triton"; }) ==
        "compute.attention_kernel");
  CHECK(profile_error("h100-hgx.json", [](json& d) {
          d["compute"]["attention_by_kernel"]["flash_attn_2"]["fwd_TFLOPs"]["value"] = 5000;  // over the 989 peak
        }) == "compute.attention_by_kernel.flash_attn_2.fwd_TFLOPs.value");
  CHECK(profile_error("h100-hgx.json", [](json& d) {
          d["compute"]["attention_by_kernel"]["flash_attn_2"].erase("bwd_TFLOPs");
        }) == "compute.attention_by_kernel.flash_attn_2.bwd_TFLOPs");
  const auto limit = [](double v) {
    return [v](json& d) {
      d["compute"]["gemm_power_limited_TFLOPs"] = {{"value", v}, {"kind", "assumption"}, {"source", "test"}};
    };
  };
  CHECK(profile_error("h100-hgx.json", limit(650)).empty());
  CHECK(profile_error("h100-hgx.json", limit(1200)) == "compute.gemm_power_limited_TFLOPs.value");  // over the peak
  CHECK(profile_error("h100-hgx.json", limit(-5)) == "compute.gemm_power_limited_TFLOPs.value");
}
