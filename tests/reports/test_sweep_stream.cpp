// Streamed sweeps: the points reach the writers in point order whatever the thread count, the
// streamed JSON and CSV are byte for byte the documents built from every point at once, and the
// listing stays bounded past kListedPoints rows while its counts cover every point.
#include <catch2/catch.hpp>

#include <filesystem>

#include "models/input/scenario.hpp"
#include "reports/output_file.hpp"
#include "reports/sweep_report.hpp"
#include "reports/sweep_stream.hpp"
#include "reports/sweep_table.hpp"
#include "studies/sweep.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// A small sweep with invalid points first (EP 3 divides neither 8 nor 32 experts) and last.
struct Sweep {
  ScenarioSource source;
  SweepSpec spec;
  PointList points;
};

Sweep small_sweep() {
  Sweep s{
      read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), {"plan.batch.global_batch_tokens=131072"}),
      {},
      {}};
  s.spec.axes.push_back({"plan.expert_parallel.degree", {3, 8, 1, 5}});
  s.spec.axes.push_back({"architecture.moe.num_experts", {8, 32}});
  s.points = expand_points(s.source, s.spec);
  return s;
}

}  // namespace

TEST_CASE("Sweep points reach the sink in point order on any number of threads", "[unit]") {
  const Sweep s = small_sweep();
  for (int jobs : {1, 2, 3, 8}) {
    INFO(jobs);
    std::vector<std::size_t> seen;
    run_points_in_order(s.source, s.points, 0, s.points.size(), jobs, {},
                        [&](SweepPoint&& p) { seen.push_back(p.index); });
    REQUIRE(seen.size() == s.points.size());
    for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
  }
}

TEST_CASE("A streamed sweep writes the same JSON and CSV bytes as the whole document", "[unit]") {
  const Sweep s = small_sweep();
  const SweepResult all = run_points(s.source, s.points, 0, s.points.size(), 2, {});
  const nlohmann::json doc = sweep_json("small", s.spec, all);
  REQUIRE(doc.at("points").at(0).at("status") == "invalid");  // held until the first valid point
  test::TempDir dir;
  SweepStream stream("small", s.spec, dir.path("s.json"), dir.path("s.csv"));
  for (const auto& p : all.points) {
    stream.add(sweep_point_json(p));
    if (!stream.any_valid()) CHECK_FALSE(std::filesystem::exists(dir.path("s.json")));
  }
  stream.finish();
  CHECK(test::slurp(dir.path("s.json")) == json_text(doc));
  CHECK(test::slurp(dir.path("s.csv")) == sweep_csv(doc));
}

TEST_CASE("A summary sweep holds the base inputs once and each point's step without its own", "[unit]") {
  const Sweep s = small_sweep();
  const Scenario base = compose(s.source);
  std::vector<nlohmann::json> full, summary;
  run_points_in_order(s.source, s.points, 0, s.points.size(), 2, {},
                      [&](SweepPoint&& p) { full.push_back(sweep_point_json(std::move(p))); });
  run_points_in_order(
      s.source, s.points, 0, s.points.size(), 2, {},
      [&](SweepPoint&& p) { summary.push_back(sweep_point_json(std::move(p), PointDetail::summary)); },
      ResolvedRecord::without_unchanged_hardware);
  REQUIRE(full.size() == summary.size());
  for (std::size_t i = 0; i < full.size(); ++i) {
    INFO(i);
    nlohmann::json expected = full[i];
    if (expected.contains("result")) expected["result"].erase("inputs");
    CHECK(summary[i] == expected);  // the full point less its inputs, nothing else
  }
  // Streamed: the same bytes as the whole document, which carries the base inputs once.
  test::TempDir dir;
  SweepStream stream("small", s.spec, dir.path("s.json"), "", base.resolved);
  for (const auto& p : summary) stream.add(p);
  stream.finish();
  const nlohmann::json doc = sweep_document("small", s.spec, nlohmann::json(summary), base.resolved);
  CHECK(test::slurp(dir.path("s.json")) == json_text(doc));
  CHECK(doc.at("detail") == "summary");
  CHECK(doc.at("inputs") == base.resolved);
  CHECK(parse_point_detail("full") == PointDetail::full);
  CHECK_THROWS_AS(parse_point_detail("ful"), InputError);
}

TEST_CASE("The CSV names a column per varied path: last key, whole path on a clash, axis. for design", "[unit]") {
  const auto columns = csv_value_columns({"architecture.moe.num_experts", "plan.batch.global_batch_tokens", "design",
                                          "plan.expert_parallel.degree", "plan.pipeline.degree"});
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"num_experts", "plan.batch.global_batch_tokens", "axis.design",
                                          "plan.expert_parallel.degree", "plan.pipeline.degree"});
  // A point that does not set a column's path leaves its cell empty.
  const nlohmann::json point = {{"index", 3}, {"values", {{"design", "ddp"}}}, {"status", "invalid"}, {"error", "x"}};
  CHECK(sweep_csv_row(point, columns).rfind("3,,,ddp,,,invalid,", 0) == 0);
}

TEST_CASE("A sweep written to no JSON renders headline points: the same CSV and listing, no inputs", "[unit]") {
  const Sweep s = small_sweep();
  std::vector<nlohmann::json> full, headline;
  SweepTally tally;
  run_points_in_order(s.source, s.points, 0, s.points.size(), 2, {}, [&](SweepPoint&& p) {
    tally.add(p);
    full.push_back(sweep_point_json(std::move(p)));
  });
  run_points_in_order(
      s.source, s.points, 0, s.points.size(), 2, {},
      [&](SweepPoint&& p) {
        // Without a hardware change the point's resolved inputs leave the profile's document out.
        if (p.ok) CHECK_FALSE(p.scenario->resolved.contains("hardware"));
        if (p.ok) CHECK(p.scenario->resolved.contains("architecture"));
        headline.push_back(sweep_point_json(std::move(p), PointDetail::headline));
      },
      ResolvedRecord::without_unchanged_hardware);
  REQUIRE(full.size() == headline.size());
  SweepListing list_full(sweep_axes_json(s.spec)), list_headline(sweep_axes_json(s.spec));
  list_full.scan(s.points);
  list_headline.scan(s.points);
  std::size_t valid = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    INFO(i);
    const auto columns = csv_value_columns(varied_paths(s.spec));
    CHECK(sweep_csv_row(headline[i], columns) == sweep_csv_row(full[i], columns));
    list_full.add(full[i]);
    list_headline.add(headline[i]);
    if (full[i].at("status") != "ok") continue;
    ++valid;
    const auto& h = headline[i].at("result");
    CHECK_FALSE(h.contains("inputs"));
    CHECK(full[i].at("result").at("inputs").contains("hardware"));
    for (const auto& [key, value] : h.items()) CHECK(full[i].at("result").at(key) == value);
  }
  CHECK(valid > 0);
  CHECK(list_headline.render(tally) == list_full.render(tally));
  CHECK(tally.fit + tally.oom == valid);
}

TEST_CASE("A point that changes the hardware keeps the changed profile in its resolved inputs", "[unit]") {
  const ScenarioSource source = read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), {});
  const Scenario changed = compose(source, changes_of({{"hardware.memory.fragmentation_fraction.value", 0.1}}),
                                   ResolvedRecord::without_unchanged_hardware);
  REQUIRE(changed.resolved.contains("hardware"));
  CHECK(changed.resolved.at("hardware").at("memory").at("fragmentation_fraction").at("value") == 0.1);
  CHECK(compose(source).resolved.contains("hardware"));
}

TEST_CASE("A streamed sweep with no valid point opens no output", "[unit]") {
  test::TempDir dir;
  SweepSpec spec;
  {
    SweepStream stream("none", spec, dir.path("n.json"), dir.path("n.csv"));
    stream.add({{"index", 0}, {"values", nlohmann::json::object()}, {"status", "invalid"}, {"error", "why"}});
    CHECK_FALSE(stream.any_valid());
    CHECK_THROWS(stream.finish());
  }
  CHECK(std::filesystem::is_empty(dir.path("")));
}

TEST_CASE("The listing keeps the first kListedPoints rows and counts every point", "[unit]") {
  SweepSpec spec;
  spec.axes.push_back({"plan.expert_parallel.degree", {3}});
  SweepListing listing(sweep_axes_json(spec));
  SweepTally tally;
  const std::size_t n = kListedPoints + 7;
  for (std::size_t i = 0; i < n; ++i) {
    listing.add({{"index", i},
                 {"values", {{"plan.expert_parallel.degree", 3}}},
                 {"status", "invalid"},
                 {"error", "EP 3 does not divide 8"}});
    SweepPoint p;
    p.index = i;
    p.error = "EP 3 does not divide 8";
    tally.add(p);
  }
  const std::string text = listing.render(tally);
  CHECK(text.find("... 7 more point(s) not listed here (--csv and --json") != std::string::npos);
  CHECK(text.find("  ... 7 more\n") != std::string::npos);
  std::string counts = std::to_string(n);
  counts += " point(s): 0 fit, 0 out of memory, ";
  counts += std::to_string(n);
  counts += " invalid";
  CHECK(text.find(counts) != std::string::npos);
  // Appended piece by piece: gcc 12's -Wrestrict misfires on `"literal" + std::string`.
  const auto reason = [](std::size_t index) {
    std::string r = "#";
    r += std::to_string(index);
    r += ": EP 3";
    return r;
  };
  CHECK(text.find(reason(kListedPoints - 1)) != std::string::npos);
  CHECK(text.find(reason(kListedPoints)) == std::string::npos);
}
