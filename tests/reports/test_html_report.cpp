// The sweep page (reports/html_report.cpp): self-contained (nothing fetched from a network),
// the sweep document embedded as an inert JSON block, and byte-identical for the same input.
// Whether the charts really draw is checked in a browser: tests/reports/html_renders_in_chromium.sh.
#include <catch2/catch.hpp>

#include <cctype>
#include <regex>
#include <stdexcept>
#include <string>

#include "reports/html/embedded_assets.hpp"
#include "reports/html_report.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

const std::string kDataOpen = "<script type=\"application/json\" id=\"moesim-sweep\">";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The text of the embedded data block.
std::string data_block(const std::string& html) {
  const auto open = html.find(kDataOpen);
  REQUIRE(open != std::string::npos);
  const auto start = open + kDataOpen.size();
  const auto close = html.find("</script>", start);
  REQUIRE(close != std::string::npos);
  return html.substr(start, close - start);
}

// A small sweep from the CLI: Figure 8's model, two designs, two global batches.
nlohmann::json cli_sweep(const test::TempDir& dir, const std::string& extra = "") {
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  REQUIRE(test::run_cli("sweep " + scenario +
                        " --vary plan.batch.global_batch_tokens=128Ki..256Ki --vary design=ddp,fsdp " + extra +
                        " -j 1 --json " + dir.path("sweep.json")) == 0);
  return nlohmann::json::parse(test::slurp(dir.path("sweep.json")));
}

// A hand-made document whose strings try to break out of the page.
nlohmann::json hostile_document() {
  return {
      {"schema", "moesim-sweep/1"},
      {"scenario", "</script><script>alert('x')</script>"},
      {"axes", {{{"path", "design"}, {"values", {"ddp", "<!-- x"}}}}},
      {"points",
       {{{"index", 0}, {"values", {{"design", "ddp"}}}, {"status", "invalid"}, {"error", "bad </b> value <!-- here"}},
        {{"index", 1}, {"values", {{"design", "<!-- x"}}}, {"status", "invalid"}, {"error", "</SCRIPT >"}}}},
      {"summary", {{"points", 2}, {"invalid", 2}}}};
}

}  // namespace

TEST_CASE("The sweep page loads nothing from a network: no src, href or import of a URL", "[unit]") {
  test::TempDir dir;
  const std::string html = html_report(cli_sweep(dir));
  CHECK_FALSE(std::regex_search(html, std::regex(R"(<script[^>]*\ssrc\s*=)", std::regex::icase)));
  CHECK_FALSE(std::regex_search(html, std::regex(R"(<link\b)", std::regex::icase)));
  CHECK_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase)));
  CHECK_FALSE(std::regex_search(html, std::regex(R"(@import|url\(\s*["']?\s*(https?:)?//)", std::regex::icase)));
  CHECK(html.find("sourceMappingURL") == std::string::npos);  // maps are not shipped
  // The charting library is inlined, whole.
  for (const char* bundle : {"vega.min.js", "vega-lite.min.js", "vega-embed.min.js"}) {
    INFO(bundle);
    const std::string_view js = html_assets::asset(bundle);
    CHECK(js.size() > 50000);
    CHECK(html.find(std::string(js.substr(0, 4000))) != std::string::npos);
  }
}

TEST_CASE("Every <script> on the page closes where it should", "[unit]") {
  test::TempDir dir;
  const std::string html = html_report(cli_sweep(dir));
  std::string lower = html;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // A "</script" or "<!--" inside an inlined bundle would end or confuse its block early.
  CHECK(count(lower, "<script") == count(lower, "</script>"));
  // Error capture, the sweep, published and comparison blocks, three bundles, page_fit.js,
  // charts_marks.js, charts.js and page.js.
  CHECK(count(lower, "<script") == 11);
  CHECK(count(html, "<!--") == 0);
}

TEST_CASE("The sweep page embeds the document as a JSON block that parses back unchanged", "[unit]") {
  test::TempDir dir;
  const nlohmann::json doc = cli_sweep(dir);
  const std::string html = html_report(doc);
  CHECK(count(html, kDataOpen) == 1);
  const std::string block = data_block(html);
  CHECK(block.find("</") == std::string::npos);
  CHECK(nlohmann::json::parse(block) == doc);
  CHECK(html.find("<title>moesim sweep: fig8-moe-ddp</title>") != std::string::npos);
  CHECK(html.find("4 points (0 invalid) over plan.batch.global_batch_tokens") != std::string::npos);
  CHECK(html.find("olmo-core convention") != std::string::npos);
}

TEST_CASE("Strings in the document cannot break out of the data block or the title", "[unit]") {
  const nlohmann::json doc = hostile_document();
  const std::string html = html_report(doc);
  const std::string block = data_block(html);
  CHECK(block.find('<') == std::string::npos);
  CHECK(nlohmann::json::parse(block) == doc);
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("<title>moesim sweep: &lt;/script&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</title>") !=
        std::string::npos);
  CHECK(html.find("2 points (2 invalid)") != std::string::npos);
}

TEST_CASE("The sweep page is byte-identical for the same sweep", "[unit]") {
  test::TempDir dir;
  const nlohmann::json doc = cli_sweep(dir);
  CHECK(html_report(doc) == html_report(doc));
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  const std::string args =
      "sweep " + scenario + " --vary plan.batch.global_batch_tokens=128Ki..256Ki --vary design=ddp,fsdp --html ";
  REQUIRE(test::run_cli(args + dir.path("a.html") + " -j 1") == 0);
  REQUIRE(test::run_cli(args + dir.path("b.html") + " -j 4") == 0);
  const std::string a = test::slurp(dir.path("a.html"));
  CHECK(a == test::slurp(dir.path("b.html")));
  // The CLI's page is the page of the document its --json writes, with the published
  // measurements of its points (Figure 8a's 128Ki DDP and FSDP runs), matched by each point's
  // resolved inputs (a --detail full document's).
  const PublishedOverlay published = published_for_scenario(scenario, cli_sweep(dir, "--detail full")["points"]);
  CHECK(published.measurements.size() == 2);
  CHECK(a == html_report(doc, published));
}

TEST_CASE("compare --html writes a page whose single axis is the design", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  REQUIRE(test::run_cli("compare " + scenario + " --design ddp --design fsdp -j 2 --html " + dir.path("c.html")) == 0);
  const auto doc = nlohmann::json::parse(data_block(test::slurp(dir.path("c.html"))));
  CHECK(doc["schema"] == "moesim-sweep/1");
  REQUIRE(doc["axes"].size() == 1);
  CHECK(doc["axes"][0]["path"] == "design");
  CHECK(doc["points"].size() == 2);
}

TEST_CASE("html_report refuses what is not a sweep document, and unknown assets are named", "[unit]") {
  CHECK_THROWS_AS(html_report(nlohmann::json::object()), std::invalid_argument);
  CHECK_THROWS_AS(html_report({{"schema", "moesim-step/1"}, {"points", nlohmann::json::array()}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(html_assets::asset("missing.js"), std::out_of_range);
  // An empty sweep still gives a page (no charts' data, an empty table).
  const std::string html = html_report({{"schema", "moesim-sweep/1"},
                                        {"scenario", "empty"},
                                        {"axes", nlohmann::json::array()},
                                        {"points", nlohmann::json::array()},
                                        {"summary", {{"points", 0}, {"invalid", 0}}}});
  CHECK(html.find("0 points (0 invalid).") != std::string::npos);
}

TEST_CASE("The charts colour every phase of the time split", "[unit]") {
  const std::string charts = test::slurp(test::source_path("reports/html/charts.js"));
  for (std::size_t p = 0; p < kPhases; ++p) {
    const std::string name = name_of(static_cast<PhaseTag>(p));
    INFO(name);
    CHECK(charts.find("[\"" + name + "\", \"#") != std::string::npos);
  }
}
