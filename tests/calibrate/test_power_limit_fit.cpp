// The dense GEMM rate at the board's power limit (compute.gemm_power_limited_TFLOPs) from
// calibrate/pytorch/sustained_gemm.py's file: the last quarter of its windows, the H200's recorded
// run reproduced, short or malformed runs refused.
#include <catch2/catch.hpp>

#include <string>

#include "calibrate/fit/fitter.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kRecorded = "calibrate/measured/h200-2026-12-04/sustained-gemm-h200.json";
const std::string kBase = "hardware_profiles/h200-hgx.json";

// A sustained-GEMM document of `rates` (one window a second) on the recorded run's H200.
json run_of(const std::vector<double>& rates) {
  json doc = read_json_file(test::source_path(kRecorded));
  doc["windows"] = json::array();
  for (std::size_t i = 0; i < rates.size(); ++i) {
    doc["windows"].push_back({{"t_s", 1.0 + static_cast<double>(i)},
                              {"gemms", 600},
                              {"tflops", rates[i]},
                              {"sm_clock_mhz", 1500},
                              {"power_w", 700},
                              {"temperature_c", 55}});
  }
  doc["summary"]["windows"] = rates.size();
  return doc;
}
}  // namespace

TEST_CASE("the recorded H200 run gives the settled rate of its last quarter", "[unit]") {
  const auto r = fit::fit_profile({test::source_path(kRecorded)}, test::source_path(kBase), {});
  const auto& q = r.profile["compute"]["gemm_power_limited_TFLOPs"];
  CHECK(q["kind"] == "fitted");
  // 89 windows: the last 22 (a quarter, rounded down, as the script's own summary), median 658.1.
  CHECK(q["value"].get<double>() == Approx(658.1).epsilon(1e-3));
  const std::string source = q["source"];
  CHECK(source.find("8192 x 8192 x 8192") != std::string::npos);
  CHECK(source.find("SM clock 1440 MHz") != std::string::npos);
  CHECK(source.find("sustained-gemm-h200.json") != std::string::npos);
  const std::string table = fit::format_fit_table(r);
  INFO(table);
  CHECK(table.find("sustained BF16 GEMM 8192 x 8192 x 8192") != std::string::npos);
}

TEST_CASE("the settled rate ignores the ramp down from boost clocks", "[unit]") {
  test::TempDir dir;
  std::vector<double> rates = {800, 760, 720};  // the limiter engaging
  for (int i = 0; i < 13; ++i) rates.push_back(i % 2 == 0 ? 650 : 660);
  const auto r = fit::fit_profile({dir.write("run.json", run_of(rates).dump())}, test::source_path(kBase), {});
  // The last quarter: 4 windows 650/660 alternating; their median 655.
  CHECK(r.profile["compute"]["gemm_power_limited_TFLOPs"]["value"].get<double>() == Approx(655).epsilon(1e-6));
}

TEST_CASE("a run too short to settle sets nothing, and says why", "[unit]") {
  test::TempDir dir;
  const std::string file = dir.write("run.json", run_of({800, 700, 660}).dump());
  try {
    fit::fit_profile({file}, test::source_path(kBase), {});
    FAIL("a three-second run set the power-limited rate");
  } catch (const InputError& e) {
    CHECK_THAT(e.message(), Catch::Contains("not mapped: needs 8 windows or more"));
  }
}

TEST_CASE("a malformed sustained-GEMM file is refused by path", "[unit]") {
  test::TempDir dir;
  const auto refused = [&](json doc, const std::string& path) {
    const std::string file = dir.write("bad.json", doc.dump());
    try {
      fit::fit_profile({file}, test::source_path(kBase), {});
      FAIL("accepted a file with a bad " << path);
    } catch (const InputError& e) {
      CHECK(e.path() == path);
    }
  };
  json doc = run_of({700, 690, 680, 670, 660, 660, 660, 660});
  json unordered = doc;
  unordered["windows"][3]["t_s"] = 1.5;
  refused(unordered, "windows[3].t_s");
  json wrong = doc;
  wrong["summary"]["check_rel_error"] = 0.5;  // the product disagrees with float64
  refused(wrong, "summary.check_rel_error");
  json flat = doc;
  flat["summary"]["shape"] = {8192, 8192};
  refused(flat, "summary.shape");
  json negative = doc;
  negative["windows"][0]["tflops"] = -1;
  refused(negative, "windows[0].tflops");
}
