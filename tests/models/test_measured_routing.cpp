// Measured routing: expert-load histograms (inline, JSON or CSV files) set each layer's rows per
// expert; a per-layer capacity factor drops above its cap; the replay reports each layer's
// imbalance; bad histograms are errors naming where.
#include <catch2/catch.hpp>

#include "models/moe/routing.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Matchers::Contains;

namespace {
const std::string kScenario = "scenarios/fig8/moe-ddp-ep8.json";  // 48 experts, top-4, EP8, layers 1-7 MoE

// 48 counts: expert 0 hot (`hot` tokens), the rest 1000 each.
std::string hot_histogram(double hot) {
  std::string out = "[";
  for (int e = 0; e < 48; ++e) {
    if (e > 0) out += ',';
    out += std::to_string(e == 0 ? hot : 1000.0);
  }
  out += ']';
  return out;
}

std::string error_of(const std::vector<std::string>& changes) {
  try {
    (void)load_scenario(test::source_path(kScenario), changes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("A measured histogram sets the rows per expert by its shares, the rank imbalance follows", "[unit]") {
  RoutingSpec spec;
  spec.kind = RoutingKind::measured;
  spec.measured[3].tokens_per_expert = {3, 1, 1, 1, 1, 1, 1, 1};  // 10 tokens: expert 0 takes 30%
  const ExpertLoad load = route(spec, 8, 2, 100, 3);              // 200 routed rows
  CHECK(load.rows.front() == Approx(60));
  CHECK(load.rows.back() == Approx(20));
  CHECK(load.dropped == 0);
  // Four ranks of two experts: rank 0 holds 60 + 20 = 80 of 200 rows, 1.6x the even 50.
  CHECK(rank_imbalance(load, 4) == Approx(1.6));
  // This layer's own cap: ceil(1.25 x 200 / 8) = 32 rows per expert; expert 0 drops 28.
  spec.measured[3].capacity_factor = 1.25;
  const ExpertLoad capped = route(spec, 8, 2, 100, 3);
  CHECK(capped.rows.front() == 32);
  CHECK(capped.dropped == Approx(28));
}

TEST_CASE("Inline entries, a JSON file and a CSV file give the same replay, a hot expert slows the step", "[unit]") {
  const test::TempDir dir;
  std::string csv = "layer,expert,tokens\n";
  for (int e = 0; e < 48; ++e) csv += "*," + std::to_string(e) + "," + (e == 0 ? "4000" : "1000") + "\n";
  dir.write("loads.csv", csv);
  dir.write("loads.json", "{\"layers\": [{\"tokens_per_expert\": " + hot_histogram(4000) + "}]}");
  const std::string file = test::source_path(kScenario);
  const auto step = [&](const std::vector<std::string>& changes) {
    return simulate(load_scenario(file, changes)).result;
  };
  const StepResult inline_loads =
      step({"plan.routing.model=measured",
            "plan.routing.expert_loads=[{\"tokens_per_expert\": " + hot_histogram(4000) + "}]"});
  const StepResult from_json =
      step({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("loads.json")});
  const StepResult from_csv =
      step({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("loads.csv")});
  const StepResult uniform = step({});
  CHECK(from_json.step_time_s == inline_loads.step_time_s);
  CHECK(from_csv.step_time_s == inline_loads.step_time_s);
  CHECK(inline_loads.step_time_s > uniform.step_time_s);
  REQUIRE(inline_loads.routing.size() == 7);
  // Rank 0 holds experts 0-5: (4000 + 5 x 1000) of 51000 tokens, over the even 1/8.
  CHECK(inline_loads.routing.front().imbalance == Approx(9000.0 / 51000 * 8));
  CHECK(uniform.routing.empty());
}

TEST_CASE("Bad histograms name the path, the line or the layer, and what is allowed", "[unit]") {
  CHECK_THAT(error_of({"plan.routing.model=measured"}), Contains("exactly one of expert_loads"));
  CHECK_THAT(error_of({"plan.routing.model=measured", "plan.routing.expert_loads=[{\"tokens_per_expert\": [1, 2]}]"}),
             Contains("one per routed expert (48)"));
  CHECK_THAT(error_of({"plan.routing.model=measured",
                       "plan.routing.expert_loads=[{\"layer\": 0, \"tokens_per_expert\": " + hot_histogram(1) + "}]"}),
             Contains("layer 0 is not an MoE layer"));
  CHECK_THAT(error_of({"plan.routing.model=measured",
                       "plan.routing.expert_loads=[{\"layer\": 2, \"tokens_per_expert\": " + hot_histogram(1) + "}]"}),
             Contains("MoE layer 1 has no histogram"));
  CHECK_THAT(error_of({"plan.routing.model=measured",
                       "plan.routing.expert_loads=[{\"tokens_per_expert\": " + hot_histogram(0) + "}, " +
                           "{\"tokens_per_expert\": " + hot_histogram(1) + "}]"}),
             Contains("a second entry without a layer"));
  const test::TempDir dir;
  dir.write("bad.csv", "layer,expert,tokens\n1,0,12\n1,0,13\n");
  CHECK_THAT(error_of({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("bad.csv")}),
             Contains("appears twice"));
  dir.write("text.csv", "layer,expert,tokens\n1,zero,12\n");
  CHECK_THAT(error_of({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("text.csv")}),
             Contains("line 2: cannot read '1,zero,12'"));
  dir.write("header.csv", "l,e,t\n");
  CHECK_THAT(error_of({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("header.csv")}),
             Contains("header must be 'layer,expert,tokens'"));
  CHECK_THAT(error_of({"plan.routing.model=measured", "plan.routing.expert_loads_file=" + dir.path("missing.json")}),
             Contains("cannot open"));
}
