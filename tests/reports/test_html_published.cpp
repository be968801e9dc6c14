// What the sweep and compare pages show beyond the sweep document: the published measurements of
// the validation datasets on the points that simulate the same runs (studies/published.cpp), a
// comparison's crossovers and walls, and the memory-class colour table. How they are drawn is
// checked in a browser: tests/reports/html_renders_in_chromium.sh.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "reports/html/embedded_assets.hpp"
#include "reports/html_report.hpp"
#include "studies/published.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// Runs `moesim sweep|compare <args> --json FILE` and parses FILE: with every point's resolved
// inputs (a sweep's --detail full), which the matching reads.
nlohmann::json cli_json(const test::TempDir& dir, const std::string& args) {
  const std::string detail = args.rfind("sweep ", 0) == 0 ? " --detail full" : "";
  REQUIRE(test::run_cli(args + detail + " -j 2 --json " + dir.path("out.json")) == 0);
  return nlohmann::json::parse(test::slurp(dir.path("out.json")));
}

std::string fig8(const std::string& name) { return test::source_path("scenarios/fig8/" + name + ".json"); }

// The text of the page's <script type="application/json" id="ID"> block.
nlohmann::json block(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const auto at = html.find(open);
  REQUIRE(at != std::string::npos);
  const auto start = at + open.size();
  return nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
}

// Measurement id -> the values of the point it was matched to.
std::map<std::string, std::vector<nlohmann::json>> matched(const PublishedOverlay& o, const nlohmann::json& doc) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const auto& m : o.measurements) out[m.id].push_back(doc["points"][m.point]["values"]);
  return out;
}

}  // namespace

TEST_CASE("Published Figure 8a points land on the sweep points of the same runs", "[unit]") {
  test::TempDir dir;
  const auto doc = cli_json(dir, "sweep " + fig8("fig8a"));
  const PublishedOverlay o = published_for_scenario(fig8("fig8a"), doc["points"]);
  REQUIRE(o.datasets == std::vector<std::string>{"scenarios/validation/seed.json", "scenarios/validation/a100.json",
                                                 "scenarios/validation/h100.json", "scenarios/validation/memory.json",
                                                 "scenarios/validation/hardware.json"});
  const auto at = matched(o, doc);
  CHECK(at.size() == 5);
  // Figure 8b's N=48 DDP verdict (fits) is Figure 8a's 4Mi DDP run too.
  CHECK(at.at("fig8b-oom-ddp-n48") == at.at("fig8a-ddp-4Mi"));
  const std::pair<const char*, nlohmann::json> expected[] = {
      {"fig8a-ddp-128Ki", {{"plan.batch.global_batch_tokens", 131072}, {"design", "ddp"}}},
      {"fig8a-ddp-4Mi", {{"plan.batch.global_batch_tokens", 4194304}, {"design", "ddp"}}},
      {"fig8a-fsdp-128Ki", {{"plan.batch.global_batch_tokens", 131072}, {"design", "fsdp"}}},
      {"fig8a-fsdp-4Mi", {{"plan.batch.global_batch_tokens", 4194304}, {"design", "fsdp"}}}};
  for (const auto& [id, values] : expected) {
    INFO(id);
    REQUIRE(at.count(id) == 1);
    CHECK(at.at(id) == std::vector<nlohmann::json>{values});
  }
  for (const auto& m : o.measurements) {
    CHECK(m.dataset == "scenarios/validation/seed.json");
    if (m.id == "fig8b-oom-ddp-n48") {
      CHECK(m.oom == std::optional<bool>(false));
      CHECK_FALSE(m.mfu.has_value());
      continue;
    }
    REQUIRE(m.mfu.has_value());
    if (m.id == "fig8a-ddp-4Mi") CHECK(*m.mfu == Approx(0.414));
    CHECK(m.source.find("Figure 8a") != std::string::npos);
    CHECK(m.known_gap.empty() == (m.id.find("fsdp") == std::string::npos));  // the FSDP points have a gap
  }
}

TEST_CASE("Published points match by the run's inputs, not by the scenario file", "[unit]") {
  test::TempDir dir;
  // moe-ddp.json is Figure 8a's model, plan and node under another name: the same runs.
  const std::string vary = " --vary plan.batch.global_batch_tokens=128Ki..256Ki --vary design=ddp,fsdp";
  const auto doc = cli_json(dir, "sweep " + fig8("moe-ddp") + vary);
  const auto at = matched(published_for_scenario(fig8("moe-ddp"), doc["points"]), doc);
  CHECK(at.size() == 2);
  CHECK(at.count("fig8a-ddp-128Ki") == 1);
  CHECK(at.count("fig8a-fsdp-128Ki") == 1);
  // A changed profile or FLOP convention is another run: nothing published describes it.
  for (const char* set : {"hardware.memory.fragmentation_fraction.value=0.15", "flop_convention=palm"}) {
    INFO(set);
    const auto other = cli_json(dir, "sweep " + fig8("moe-ddp") + vary + " --set " + set);
    CHECK(published_for_scenario(fig8("moe-ddp"), other["points"]).measurements.empty());
  }
}

TEST_CASE("Figure 8b: the published band, OOM verdicts and dense references find their points", "[unit]") {
  test::TempDir dir;
  const auto doc = cli_json(dir, "sweep " + fig8("fig8b"));
  const PublishedOverlay o = published_for_scenario(fig8("fig8b"), doc["points"]);
  const auto at = matched(o, doc);
  // The DDP+EP8 42-44% range gives one entry per swept expert count, each with the band.
  REQUIRE(at.count("fig8b-ddp-ep8-range") == 1);
  CHECK(at.at("fig8b-ddp-ep8-range").size() == 5);
  std::size_t bands = 0, verdicts = 0;
  for (const auto& m : o.measurements) {
    if (m.mfu_min) {
      ++bands;
      CHECK(*m.mfu_min == Approx(0.42));
      CHECK(*m.mfu_max == Approx(0.44));
      CHECK(doc["points"][m.point]["values"]["design"] == "ddp+ep8");
    }
    if (m.oom) {
      ++verdicts;
      // Every published verdict is the simulated one on its point, except DDP at N=64, the
      // record with the documented gap (the caching-allocator replay finds it fits).
      INFO(m.id);
      CHECK((doc["points"][m.point]["result"]["oom"] == *m.oom) == m.known_gap.empty());
    }
  }
  CHECK(bands == 5);
  CHECK(verdicts == 7);
  // The dense references are the sweep's included points.
  for (const char* id : {"fig8b-dense-ddp", "fig8b-dense-fsdp"}) {
    INFO(id);
    REQUIRE(at.count(id) == 1);
    CHECK(at.at(id)[0].contains("architecture"));
  }
  // Figure 8a's 4Mi points are Figure 8b's N=48 points.
  CHECK(at.at("fig8a-ddp-4Mi")[0] == nlohmann::json{{"architecture.moe.num_experts", 48}, {"design", "ddp"}});
}

TEST_CASE("Without a validation dataset nearby the page says so and draws none", "[unit]") {
  test::TempDir dir;
  // A scenario outside the repository (its inputs named by absolute path), wherever the test runs.
  const std::string s =
      dir.write("alone.json",
                nlohmann::json{{"name", "alone"},
                               {"architecture", test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json")},
                               {"plan", test::source_path("scenarios/plans/ddp-1node.json")},
                               {"hardware", test::source_path("hardware_profiles/b300-hgx.json")}}
                    .dump());
  const auto doc = cli_json(dir, "sweep " + s + " --vary design=ddp,fsdp");
  const PublishedOverlay o = published_for_scenario(s, doc["points"]);
  CHECK(o.datasets.empty());
  CHECK(o.measurements.empty());
  const std::string html = html_report(doc, o);
  CHECK(html.find("No validation dataset (scenarios/validation/) was found in a folder above the scenario file") !=
        std::string::npos);
  CHECK(block(html, "moesim-published") ==
        nlohmann::json{{"datasets", nlohmann::json::array()}, {"measurements", nlohmann::json::array()}});
  CHECK(block(html, "moesim-comparison").is_null());
}

TEST_CASE("The page embeds the published measurements it matched and names their dataset", "[unit]") {
  test::TempDir dir;
  const auto full = cli_json(dir, "sweep " + fig8("fig8a"));
  const PublishedOverlay o = published_for_scenario(fig8("fig8a"), full["points"]);
  REQUIRE(test::run_cli("sweep " + fig8("fig8a") + " -j 2 --html " + dir.path("a.html") + " --json " +
                        dir.path("summary.json")) == 0);
  const std::string html = test::slurp(dir.path("a.html"));
  const auto doc = nlohmann::json::parse(test::slurp(dir.path("summary.json")));
  CHECK(doc.at("detail") == "summary");
  CHECK(html == html_report(doc, o));  // the CLI's page is its summary document's, with these measurements
  const auto published = block(html, "moesim-published");
  CHECK(published == published_json(o));
  REQUIRE(published["measurements"].size() == 5);
  for (const auto& m : published["measurements"]) {
    CHECK(m.contains("mfu") != m.contains("oom"));  // only the metrics the record has
    CHECK(doc["points"][m["point"].get<std::size_t>()]["status"] == "ok");
  }
  CHECK(html.find("Published measurements (hollow diamonds, from scenarios/validation/seed.json): 5 on these "
                  "points.") != std::string::npos);
  CHECK(html.find("<title>moesim sweep: fig8a</title>") != std::string::npos);
}

TEST_CASE("compare --html is titled a comparison and carries its crossovers and walls", "[unit]") {
  test::TempDir dir;
  const std::string args = "compare " + fig8("moe-ddp") + " --design fsdp --design ddp --design ddp+ep8 -j 2";
  REQUIRE(test::run_cli(args + " --json " + dir.path("c.json") + " --html " + dir.path("c.html")) == 0);
  const auto compare = nlohmann::json::parse(test::slurp(dir.path("c.json")));
  const std::string html = test::slurp(dir.path("c.html"));
  CHECK(html.find("<title>moesim comparison: fig8-moe-ddp</title>") != std::string::npos);
  CHECK(html.find("<section id=\"comparison\" hidden>") != std::string::npos);  // page.js shows it
  const auto shown = block(html, "moesim-comparison");
  CHECK(shown ==
        nlohmann::json{{"batch_crossovers", compare["batch_crossovers"]}, {"expert_walls", compare["expert_walls"]}});
  CHECK(shown["batch_crossovers"].size() == 2);
  CHECK(shown["expert_walls"].size() == 3);
  CHECK(shown["batch_crossovers"][0]["global_batch_tokens"] == 262144);  // DDP reaches FSDP at 256Ki
  // The designs' points stay in the sweep block, once.
  CHECK(block(html, "moesim-sweep")["points"].size() == 3);
  // A comparison that is not one is refused.
  CHECK_THROWS_AS(html_report(block(html, "moesim-sweep"), {}, nlohmann::json{{"schema", "moesim-sweep/1"}}),
                  std::invalid_argument);
}

TEST_CASE("The memory chart has a colour for every ledger class, rebuild buffers included", "[unit]") {
  const std::string charts(html_assets::asset("charts.js"));
  std::set<std::string> names;
  for (int c = 0; c <= static_cast<int>(MemClass::weight_rebuild); ++c) {
    const std::string name(name_of(static_cast<MemClass>(c)));
    INFO(name);
    CHECK(names.insert(name).second);
    CHECK(charts.find("[\"" + name + "\", \"#") != std::string::npos);
  }
  CHECK(names.count("weight_rebuild") == 1);
  CHECK(names.count("optimizer_transients") == 1);
}
