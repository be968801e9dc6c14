// Bad inputs to `moesim fit runs`: each a clear error naming the file and the JSON path (or the
// option) at fault, and from the command line exit code 2 with no profile written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "sim/step_simulation.hpp"
#include "studies/run_fit.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {

json one_run(const std::string& id, json measured) {
  return {{"id", id},
          {"scenario", test::source_path("scenarios/fig8/fig8a.json")},
          {"set", {{"design", "ddp"}, {"plan.batch.global_batch_tokens", 131072}}},
          {"measured", std::move(measured)},
          {"source", "authored for this test"}};
}

json document(std::vector<json> runs) { return {{"schema", "moesim-runs/1"}, {"runs", runs}}; }

// The error parse_runs throws for `doc` (fails the test when it accepts it).
InputError parse_error(const json& doc) {
  try {
    parse_runs(doc, "runs.json", {});
  } catch (const InputError& e) {
    return e;
  }
  FAIL("accepted " << doc.dump());
  throw;
}

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("A runs file reads its scenario, overrides and measurements", "[unit][fit_runs]") {
  const RunsFile runs =
      parse_runs(document({one_run("a", {{"step_time_ms", 1500}, {"mfu", 0.3}, {"flop_convention", "palm"}}),
                           one_run("b", {{"peak_allocated_GiB", 80}, {"phase_exposed_ms", {{"forward", 12.5}}}})}),
                 "runs.json", {});
  REQUIRE(runs.runs.size() == 2);
  const auto& a = runs.runs[0];
  CHECK(a.design == "ddp");
  CHECK(a.gpus == 8);
  CHECK(a.experts == 48);
  CHECK(a.flop_convention == "palm");
  REQUIRE(a.metrics.size() == 2);
  CHECK(a.metrics[0].name == "step_time_s");
  CHECK(a.metrics[0].measured == 1.5);
  CHECK(a.metrics[1].name == "mfu");
  const auto& b = runs.runs[1];
  REQUIRE(b.metrics.size() == 2);
  CHECK(b.metrics[1].name == "phase.forward_s");
  CHECK(b.metrics[1].measured == 0.0125);
  // Each metric gets the replay's number: the step time, the MFU under the run's own convention
  // (PaLM counts attention without the causal half, so more FLOPs than Olmo-core's count), the
  // largest stage's peak and the critical rank's exposed forward time.
  const Simulation sim = simulate(compose(a.scenario));
  const auto predicted = predict_run(a, {});
  REQUIRE(predicted.size() == 2);
  CHECK(predicted[0] == sim.result.step_time_s);
  CHECK(predicted[1] == sim.result.mfu);
  const RunsFile olmo =
      parse_runs(document({one_run("a", {{"mfu", 0.3}, {"flop_convention", "olmo-core"}})}), "runs.json", {});
  CHECK(predict_run(olmo.runs[0], {})[0] < predicted[1]);
  const auto b_predicted = predict_run(b, {});
  REQUIRE(b_predicted.size() == 2);
  CHECK(b_predicted[0] == Approx(sim.result.ledger.stages[0].peak_allocated / (1024.0 * 1024 * 1024)));
  CHECK(b_predicted[1] == sim.result.exposed_s[static_cast<std::size_t>(PhaseTag::forward)]);
  CHECK(b_predicted[1] > 0);
}

TEST_CASE("Measurements without units are refused, naming the key and the keys with units", "[unit][fit_runs]") {
  const InputError e = parse_error(document({one_run("a", {{"step_time", 1.2}})}));
  CHECK(e.file() == "runs.json");
  CHECK(e.path() == "runs[0].measured.step_time");
  CHECK(e.message().find("without its unit") != std::string::npos);
  CHECK(e.message().find("step_time_s, step_time_ms") != std::string::npos);
  CHECK(parse_error(document({one_run("a", {{"peak_allocated", 80}})})).path() == "runs[0].measured.peak_allocated");
  CHECK(parse_error(document({one_run("a", {{"tokens_per_s", 9000}})})).message().find("tokens_per_s_per_gpu") !=
        std::string::npos);
}

TEST_CASE("Other malformed runs name the file and the path", "[unit][fit_runs]") {
  CHECK(parse_error(document({one_run("a", {{"mfu", 0.4}})})).path() == "runs[0].measured.mfu");
  CHECK(parse_error(document({one_run("a", {{"mfu", 0.4}, {"flop_convention", "olmo_core"}})}))
            .message()
            .find("did you mean 'olmo-core'") != std::string::npos);
  CHECK(parse_error(document({one_run("a", json::object())})).path() == "runs[0].measured");
  CHECK(parse_error(document({one_run("a", {{"step_time_s", -1}})})).path() == "runs[0].measured.step_time_s");
  CHECK(parse_error(document({one_run("a", {{"phase_exposed_ms", {{"fwd", 1}}}})})).path() ==
        "runs[0].measured.phase_exposed_ms.fwd");
  CHECK(parse_error(document({one_run("a", {{"step_time_s", 1}}), one_run("a", {{"step_time_s", 1}})})).path() ==
        "runs[1].id");
  CHECK(parse_error(document({})).path() == "runs");
  json no_source = document({one_run("a", {{"step_time_s", 1}})});
  no_source["runs"][0].erase("source");
  CHECK(parse_error(no_source).path() == "runs[0].source");
}

TEST_CASE("A run whose scenario is invalid names the runs file and the run", "[unit][fit_runs]") {
  json bad_set = document({one_run("a", {{"step_time_s", 1}})});
  bad_set["runs"][0]["set"]["plan.batch.global_batch_tokenz"] = 4;
  const InputError e = parse_error(bad_set);
  CHECK(e.file() == "runs.json");
  CHECK(e.path() == "runs[0].scenario");
  CHECK(e.message().find("global_batch_tokenz") != std::string::npos);
  json missing = document({one_run("a", {{"step_time_s", 1}})});
  missing["runs"][0]["scenario"] = "no-such-scenario.json";
  CHECK(parse_error(missing).message().find("no-such-scenario.json") != std::string::npos);
  json inline_bad = document({one_run("a", {{"step_time_s", 1}})});
  inline_bad["runs"][0]["scenario"] = {{"architecture", "x.json"}};
  CHECK(parse_error(inline_bad).path() == "runs[0].scenario");
}

TEST_CASE("fit_runs refuses unknown fields and more free fields than runs", "[unit][fit_runs]") {
  const RunsFile one = parse_runs(document({one_run("a", {{"step_time_s", 1}})}), "runs.json", {});
  const std::string unknown = message_of([&] { fit_runs(one, {"hardware.host.step_overhead"}); });
  CHECK(unknown.find("--free: hardware.host.step_overhead: not a fittable profile field") == 0);
  CHECK(unknown.find("did you mean 'hardware.host.step_overhead_us'") != std::string::npos);
  CHECK(unknown.find("hardware.interference.comm_slowdown_with_compute") != std::string::npos);  // the list
  const std::string too_many = message_of([&] {
    fit_runs(one, {"hardware.host.step_overhead_us", "hardware.interference.compute_slowdown_with_comm"});
  });
  CHECK(too_many.find("runs.json: runs: 1 run(s) cannot determine 2 free fields") == 0);
  CHECK(message_of([&] {
          fit_runs(one, {"hardware.host.step_overhead_us", "hardware.host.step_overhead_us"});
        }).find("named twice") != std::string::npos);
}

TEST_CASE("moesim fit runs: exit code 2 and no profile for bad input", "[unit][fit_runs]") {
  test::TempDir dir;
  const std::string out = dir.path("fitted.json");
  const std::string base = " --base " + test::source_path("hardware_profiles/b300-hgx.json");
  const std::string good = dir.write("runs.json", document({one_run("a", {{"step_time_s", 1}})}).dump());
  const std::string unitless = dir.write("unitless.json", document({one_run("a", {{"step_time", 1}})}).dump());
  CHECK(test::run_cli("fit runs " + good + base + " --free hardware.host.step_overhead -o " + out) == 2);
  CHECK(test::run_cli("fit runs " + unitless + base + " --free hardware.host.step_overhead_us -o " + out) == 2);
  CHECK(test::run_cli("fit runs " + good + base +
                      " --free hardware.host.step_overhead_us hardware.compute.kernel_launch_us -o " + out) == 2);
  CHECK(test::run_cli("fit runs " + good + " --free hardware.host.step_overhead_us -o " + out) == 2);  // no --base
  CHECK(test::run_cli("fit runs " + good + base + " --free hardware.host.step_overhead_us") == 2);     // no -o
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(test::run_cli("fit " + good + " -o " + out) == 2);  // the measurement fit still needs --base
}
