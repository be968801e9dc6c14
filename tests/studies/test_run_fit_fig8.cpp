// The demonstration calibrate/README.md prints: fit on the seed's Figure 8a points, predict
// Figure 8b's (and the reverse), kernel-level profile against fitted against published. The
// numbers are the README's tables; when the model moves them, this test says the tables are stale.
#include <catch2/catch.hpp>

#include "studies/run_fit.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

const std::vector<std::string> kFree = {"hardware.interconnect.intra_node.ring.busbw_efficiency.all_gather",
                                        "hardware.interconnect.intra_node.ring.busbw_efficiency.reduce_scatter",
                                        "hardware.host.step_overhead_us"};

RunsFile fig8_runs(const std::string& panel) {
  const std::string base = test::source_path("hardware_profiles/b300-hgx.json");
  return read_runs(test::source_path("scenarios/runs/" + panel + ".json"), {"hardware=\"" + base + "\""});
}

const MetricErrors& mfu_errors(const std::vector<MetricErrors>& errors) {
  for (const auto& e : errors) {
    if (e.metric == "mfu") return e;
  }
  FAIL("no MFU errors");
  throw;
}

// The MFU predicted for `run` (in %), fitted (or kernel-level when `base`).
double mfu_of(const std::vector<MetricPrediction>& predictions, const std::string& run, bool base) {
  for (const auto& p : predictions) {
    if (p.run == run && p.metric == "mfu") return 100 * (base ? p.base : p.predicted);
  }
  FAIL("no MFU prediction for " << run);
  throw;
}

}  // namespace

TEST_CASE("Fitted on Figure 8a, moesim fit runs predicts Figure 8b as calibrate/README.md shows", "[validation]") {
  const RunsFile fig8a = fig8_runs("fig8a"), fig8b = fig8_runs("fig8b");
  const RunFitResult fit = fit_runs(fig8a, kFree);
  REQUIRE(fit.parameters.size() == 3);
  CHECK(fit.parameters[0].at_bound);  // all-gather at 1.0
  CHECK(fit.parameters[1].fitted == Approx(0.458).margin(0.002));
  CHECK(fit.parameters[2].fitted == Approx(24430).margin(100));
  CHECK(mfu_errors(fit.loo.errors).mean_abs == Approx(0.026).margin(0.001));
  CHECK(mfu_errors(fit.loo.errors).base_mean_abs == Approx(0.060).margin(0.001));
  const RunPredictions b = predict_runs(fig8b, fig8a, fit.parameters);
  CHECK(mfu_of(b.predictions, "fig8b-fsdp-n128", true) == Approx(18.3).margin(0.05));
  CHECK(mfu_of(b.predictions, "fig8b-fsdp-n128", false) == Approx(16.7).margin(0.05));
  CHECK(mfu_of(b.predictions, "fig8b-dense-fsdp", false) == Approx(47.7).margin(0.05));
  CHECK(mfu_errors(b.errors).mean_abs == Approx(0.029).margin(0.001));
  CHECK(b.warnings.size() == 5);  // every 8b run lies outside the 8a runs (design or expert count)
}

TEST_CASE("Fitted on Figure 8b, moesim fit runs predicts Figure 8a as calibrate/README.md shows", "[validation]") {
  const RunsFile fig8a = fig8_runs("fig8a"), fig8b = fig8_runs("fig8b");
  const RunFitResult fit = fit_runs(fig8b, kFree);
  CHECK_FALSE(fit.parameters[0].determined);  // one FSDP MoE run: all-gather and reduce-scatter alike
  CHECK(fit.parameters[0].fitted == 0.7);
  CHECK(fit.parameters[1].fitted == Approx(0.475).margin(0.002));
  CHECK(fit.parameters[2].at_bound);  // the step overhead at 0
  CHECK(mfu_errors(fit.loo.errors).max_abs == Approx(0.300).margin(0.002));
  const RunPredictions a = predict_runs(fig8a, fig8b, fit.parameters);
  CHECK(mfu_of(a.predictions, "fig8a-fsdp-128Ki", false) == Approx(27.3).margin(0.05));
  CHECK(mfu_of(a.predictions, "fig8a-fsdp-4Mi", false) == Approx(29.1).margin(0.05));
  CHECK(mfu_errors(a.errors).mean_abs == Approx(0.021).margin(0.001));
}
