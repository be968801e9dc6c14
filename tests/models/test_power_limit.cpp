// A board power limit below the default (models/hw/power_limit.hpp): the compute-bound rates
// scale by the profile's measured GEMM rate at the limit over its rate at the default, HBM and
// links keep theirs, the step report says so, and a limit the profile cannot price is refused.
#include <catch2/catch.hpp>

#include "models/costs/compute_costs.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "reports/step_report.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
constexpr const char* kH100 = "scenarios/gallery/llama3-8b.json";  // FSDP2 on 8 x H100
// The H100 profile's table: 585.2 TFLOP/s at 500 W (pytorch/FBGEMM PR 2546), 658.1 at 700 W.
constexpr double kAt500 = 585.2, kAt700 = 658.1;

Scenario at(const std::string& watts) {
  return load_scenario(test::source_path(kH100), {"hardware.gpu.power_limit_W=" + watts});
}

std::string refusal(const std::string& file, const std::string& watts) {
  try {
    (void)load_scenario(test::source_path(file), {"hardware.gpu.power_limit_W=" + watts});
  } catch (const InputError& e) {
    CHECK(e.path() == "hardware.gpu.power_limit_W");
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("Under a lower power limit GEMM and attention slow by the measured ratio, HBM and links do not", "[unit]") {
  const Scenario full = load_scenario(test::source_path(kH100), {});
  const Scenario limited = at("500");
  const double factor = kAt500 / kAt700;
  REQUIRE(limited.hardware.power_limit);
  CHECK(limited.hardware.power_limit->factor == Approx(factor));
  CHECK_FALSE(full.hardware.power_limit);
  for (const double rows : {256.0, 8192.0, 65536.0})
    CHECK(dense_gemm_rate_TFLOPs(limited.hardware, rows) ==
          Approx(factor * dense_gemm_rate_TFLOPs(full.hardware, rows)));
  CHECK(limited.hardware.compute.attention_fwd_TFLOPs.value ==
        Approx(factor * full.hardware.compute.attention_fwd_TFLOPs.value));
  CHECK(limited.hardware.compute.attention_bwd_TFLOPs.value ==
        Approx(factor * full.hardware.compute.attention_bwd_TFLOPs.value));
  for (std::size_t k = 0; k < full.hardware.compute.attention_by_kernel.size(); ++k) {
    CHECK(limited.hardware.compute.attention_by_kernel[k].fwd_TFLOPs.value ==
          Approx(factor * full.hardware.compute.attention_by_kernel[k].fwd_TFLOPs.value));
  }
  const ProfileCostBook a(full.hardware), b(limited.hardware);
  CHECK(b.memory(1e9, MemoryKernel::copy) == a.memory(1e9, MemoryKernel::copy));
  CollectiveRequest gather;
  gather.kind = CollectiveKind::all_gather;
  gather.bytes = 1e9;
  gather.ranks = 8;
  CHECK(b.collective(gather).time_s == a.collective(gather).time_s);
  // Linear in watts between the measured limits; the board's own limit changes nothing.
  CHECK(at("600").hardware.power_limit->factor == Approx((kAt500 + kAt700) / 2 / kAt700));
  CHECK_FALSE(at("700").hardware.power_limit);
  CHECK(dense_gemm_rate_TFLOPs(at("700").hardware, 8192) == dense_gemm_rate_TFLOPs(full.hardware, 8192));
}

TEST_CASE("The step report says when a power limit applies", "[unit]") {
  const Scenario limited = at("500");
  const Scenario full = load_scenario(test::source_path(kH100), {});
  const Simulation run = simulate(limited);
  const Simulation base = simulate(full);
  CHECK(run.result.step_time_s > base.result.step_time_s);
  CHECK_THAT(step_table(limited, run.result),
             Catch::Contains("power    limited to 500 W of the board's 700 W: GEMM and attention at 0.889"));
  CHECK(step_json(limited, run.result)["power_limit"]["factor"].get<double>() == Approx(kAt500 / kAt700));
  CHECK_FALSE(step_json(full, base.result).contains("power_limit"));
}

TEST_CASE("A power limit the profile cannot price is refused, naming the key and what is allowed", "[unit]") {
  CHECK_THAT(refusal(kH100, "800"), Catch::Contains("exceeds the board's limit") && Catch::Contains("up to 700 W"));
  CHECK_THAT(refusal(kH100, "300"), Catch::Contains("allowed here: 500 W to 700 W"));
  CHECK_THAT(refusal(kH100, "0.5"), Catch::Contains("not plausible") && Catch::Contains("kW typed as W"));
  // B300 has no measurements below its 1.1 kW default.
  CHECK_THAT(refusal("scenarios/fig8/dense-ddp.json", "900"),
             Catch::Contains("compute.gemm_TFLOPs_by_power_limit") && Catch::Contains("allowed here: 1100 W"));
}
