// The plan page (reports/plan_html.cpp) on the hand-written moesim-plan/1 fixture
// tests/data/plan/plan-sample.json: the document and the frontier chart's spec embedded as inert
// JSON blocks, every top plan named in the static tables, the same bytes on every render, and a
// clear error naming the JSON path for a document that does not follow the schema.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/plan_html.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

nlohmann::json sample() {
  static const nlohmann::json doc =
      nlohmann::json::parse(test::slurp(test::source_path("tests/data/plan/plan-sample.json")));
  return doc;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The text of the JSON block <script type="application/json" id="ID">.
nlohmann::json block(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const auto at = html.find(open);
  REQUIRE(at != std::string::npos);
  const auto start = at + open.size();
  const auto close = html.find("</script>", start);
  REQUIRE(close != std::string::npos);
  return nlohmann::json::parse(html.substr(start, close - start));
}

// The HTML of <table ... id="ID">...</table>.
std::string table(const std::string& html, const std::string& id) {
  const auto at = html.find("id=\"" + id + "\"");
  REQUIRE(at != std::string::npos);
  const auto end = html.find("</table>", at);
  REQUIRE(end != std::string::npos);
  return html.substr(at, end - at);
}

// The chart layer named `name` (its SVG group is NAME_marks), or null.
nlohmann::json layer(const nlohmann::json& spec, const std::string& name) {
  for (const auto& l : spec.at("layer"))
    if (l.at("name") == name) return l;
  return nullptr;
}

std::vector<long long> candidates(const nlohmann::json& l) {
  std::vector<long long> out;
  for (const auto& d : l.at("data").at("values")) out.push_back(d.at("candidate").get<long long>());
  return out;
}

std::string error_of(const nlohmann::json& doc) {
  try {
    (void)plan_html_report(doc);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("The plan page embeds the plan document unchanged", "[unit]") {
  const std::string html = plan_html_report(sample());
  CHECK(block(html, "moesim-plan") == sample());
  CHECK(html.find("<title>moesim plan: fig8-moe-ddp-ep8</title>") != std::string::npos);
  CHECK(html.find("24 candidate plans for 8 GPUs, 13 refused by a rule, 3 pruned as OOM") != std::string::npos);
  // Offline: nothing is loaded from a URL; the vendored Vega bundles are inlined.
  CHECK_FALSE(std::regex_search(html, std::regex(R"(<script[^>]*\ssrc\s*=)", std::regex::icase)));
  CHECK_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase)));
  CHECK(html.find("sourceMappingURL") == std::string::npos);
  CHECK(count(html, "<script>") == 6);  // error recorder, three Vega bundles, page_fit.js, the page's script
}

TEST_CASE("The plan page names every top plan with its numbers, in rank order", "[unit]") {
  const nlohmann::json doc = sample();  // kept alive: the loop walks a reference into it
  const std::string html = plan_html_report(doc);
  const std::string top = table(html, "top-table");
  std::size_t last = 0;
  for (const auto& t : doc.at("top")) {
    const auto design = t.at("point").at("result").at("design").get<std::string>();
    const std::string cell = "<td>" + design + " (#" + std::to_string(t.at("candidate").get<int>()) + ")</td>";
    INFO(cell);
    const auto at = top.find(cell);
    REQUIRE(at != std::string::npos);
    CHECK(at > last);
    last = at;
  }
  CHECK(count(top, "<tr>") == 4);  // the header and the top 3
  // Rank 1: ddp+ep8, 53,200 tokens/s/GPU, MFU 43.0%, 9.855 s, 138.5 GiB, 130.1 GiB headroom.
  CHECK(top.find("<td>design=ddp \xC2\xB7 ep=8 \xC2\xB7 pp=1</td><td class=\"num\">53,200</td><td class=\"num\">43.0%"
                 "</td><td class=\"num\">9.855</td><td class=\"num\">138.5</td><td class=\"num\">130.1</td>"
                 "<td>backward</td>") != std::string::npos);
  const std::string families = table(html, "families-table");
  CHECK(families.find("<td>ddp</td><td>ddp+ep8 (#15)</td><td class=\"num\">53,200</td><td class=\"num\">100.0%</td>") !=
        std::string::npos);
  CHECK(families.find("<td>hsdp</td><td>no replayed plan</td>") != std::string::npos);
  CHECK(families.find("<td>fsdp</td><td>fsdp (#0)</td><td class=\"num\">35,324</td><td class=\"num\">66.4%</td>") !=
        std::string::npos);
  const std::string refusals = table(html, "refusals-table");
  CHECK(refusals.find("<td>EP degree does not divide the DP degree</td><td class=\"num\">4</td>") != std::string::npos);
  // Every candidate that passed the rules is a row, OOM ones marked.
  const std::string plans = table(html, "plans-table");
  CHECK(count(plans, "<tr>") == 1 + sample().at("plans").size());
  CHECK(count(plans, "<td>OOM</td>") == 3);
  const std::string runner_up = table(html, "runner-up-table");
  CHECK(html.find("the runner-up&#39;s step is 0.033 s longer") != std::string::npos);
  CHECK(count(runner_up, "<tr>") == 1 + sample().at("best_vs_runner_up").at("phases").size());
}

TEST_CASE("The frontier chart draws replayed plans, the top K, the Pareto frontier, capacity and OOM bounds",
          "[unit]") {
  const auto spec = block(plan_html_report(sample()), "moesim-plan-frontier");
  CHECK(layer(spec, "replayed").at("data").at("values").size() == 4);
  CHECK(layer(spec, "replayed").at("encoding").at("x").at("field") == "GiB");
  CHECK(layer(spec, "replayed").at("encoding").at("y").at("field") == "tokens_per_s_per_gpu");
  // The top K, labelled with their rank (the tooltip and the top table name the design).
  std::set<std::string> labels;
  // Odd ranks are labelled above their ring, even ones below, so neighbours do not overlap.
  for (const char* name : {"top_labels", "top_labels_below"}) {
    const auto labelled = layer(spec, name);
    for (const auto& d : labelled.at("data").at("values")) labels.insert(d.at("label").get<std::string>());
  }
  CHECK(labels == std::set<std::string>{"#1", "#2", "#3"});
  CHECK(layer(spec, "top_labels_below").at("data").at("values").size() == 1);
  // Frontier: fsdp (134.0 GiB, 35,324) then ddp+ep8 (138.5 GiB, 53,200); ddp+ep8+nodistopt (160.1 GiB)
  // and ddp+pp2 (183.0 GiB) need more memory for less.
  CHECK(candidates(layer(spec, "frontier")) == std::vector<long long>{0, 15});
  CHECK(layer(spec, "frontier").at("mark").at("interpolate") == "step-after");
  // The usable-capacity wall is the top point's capacity_GiB.
  const auto capacity = layer(spec, "capacity");
  CHECK(capacity.at("mark").at("type") == "rule");
  CHECK(capacity.at("data").at("values")[0].at("GiB").get<double>() == Approx(268.6));
  // OOM plans at their memory, at the tokens/s/GPU of their bound; the legend says it is an upper bound.
  // The memory axis spans the capacity (268.6 GiB) and a quarter more: candidate 18 at 567.0 GiB is
  // counted in the subtitle, not drawn.
  const auto oom = layer(spec, "oom_bound");
  CHECK(candidates(oom) == std::vector<long long>{12, 19});
  CHECK(oom.at("data").at("values")[1].at("GiB").get<double>() == Approx(325.9));
  CHECK(spec.at("title").at("subtitle") ==
        "1 memory-pruned plan(s) above 335 GiB per GPU are not drawn (the table lists them)");
  const std::string kind = oom.at("data").at("values")[0].at("kind").get<std::string>();
  CHECK(kind.find("upper bound") != std::string::npos);
  const auto& domain = oom.at("encoding").at("color").at("scale").at("domain");
  CHECK(std::find(domain.begin(), domain.end(), kind) != domain.end());
}

TEST_CASE("The chart draws the document's frontier, and none for a document without one", "[unit]") {
  auto doc = sample();
  doc["frontier"] = nlohmann::json::array({15});
  CHECK(candidates(layer(block(plan_html_report(doc), "moesim-plan-frontier"), "frontier")) ==
        std::vector<long long>{15});
  doc.erase("frontier");
  const auto spec = block(plan_html_report(doc), "moesim-plan-frontier");
  for (const auto& l : spec.at("layer")) CHECK(l.at("name") != "frontier");
  CHECK_FALSE(layer(spec, "replayed").is_null());
}

TEST_CASE("The plan page is the same bytes on every render", "[unit]") {
  CHECK(plan_html_report(sample()) == plan_html_report(sample()));
  // A pure function of the document: another document gives another page.
  auto other = sample();
  other["scenario"] = "another";
  CHECK(plan_html_report(other) != plan_html_report(sample()));
}

TEST_CASE("A scenario name cannot break out of the plan page", "[unit]") {
  auto doc = sample();
  doc["scenario"] = "</script><script>alert('x')</script><!--";
  doc["plans"][0]["design"] = "fsdp</td><b>";
  const std::string html = plan_html_report(doc);
  CHECK(
      html.find("<title>moesim plan: &lt;/script&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;!--</title>") !=
      std::string::npos);
  CHECK(html.find("<td>fsdp&lt;/td&gt;&lt;b&gt;</td>") != std::string::npos);
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(count(html, "<!--") == 0);
  // Every script block closes where it should: as many </script> as <script openings.
  CHECK(count(html, "</script>") == count(html, "<script"));
  CHECK(block(html, "moesim-plan") == doc);
}

TEST_CASE("A plan document without replays gives a page without a top K or a chart", "[unit]") {
  auto doc = sample();
  doc["plans"] = nlohmann::json::array();
  doc["top"] = nlohmann::json::array();
  doc["best_vs_runner_up"] = nullptr;
  doc["families"] = nlohmann::json::array();
  const std::string html = plan_html_report(doc);
  CHECK(block(html, "moesim-plan-frontier").is_null());
  CHECK(html.find("No plan was replayed, so there is no top K.") != std::string::npos);
  CHECK(html.find("Fewer than two plans were replayed") != std::string::npos);
}

TEST_CASE("A document that does not follow moesim-plan/1 is refused with its JSON path", "[unit]") {
  auto missing = sample();
  missing["plans"][3].erase("fits");
  CHECK(error_of(missing) == "/plans/3: missing key 'fits' (see reports/schema/moesim-plan.schema.json)");
  auto status = sample();
  status["plans"][1]["status"] = "skipped";
  CHECK(error_of(status) ==
        "/plans/1/status: \"skipped\" is not a status; allowed: replayed, pruned_by_memory, "
        "pruned_by_bound (see reports/schema/moesim-plan.schema.json)");
  auto replay = sample();
  replay["plans"][0].erase("mfu");  // replayed plans carry their replay's numbers
  CHECK(error_of(replay).find("/plans/0: missing key 'mfu'") == 0);
  auto type = sample();
  type["request"]["gpus"] = "eight";
  CHECK(error_of(type).find("/request/gpus: expected an integer, found \"eight\"") == 0);
  auto top = sample();
  top["top"][0]["candidate"] = 99;
  CHECK(error_of(top).find("/top/0/candidate: candidate 99 is not one of the document's plans") == 0);
  auto schema = sample();
  schema["schema"] = "moesim-sweep/1";
  CHECK(error_of(schema).find("/schema: expected \"moesim-plan/1\"") == 0);
  CHECK(error_of(nlohmann::json::array()).find("/: expected an object, found array") == 0);
}

TEST_CASE("Plans tied in the top K share one label on the frontier chart", "[unit]") {
  auto doc = sample();
  // Candidate 0 (replayed, out of the top) ties with the best: it takes rank 1 too.
  for (auto& p : doc.at("plans"))
    if (p.at("candidate") == 0) p["rank"] = 1;
  const auto spec = block(plan_html_report(doc), "moesim-plan-frontier");
  std::size_t ones = 0;
  for (const char* name : {"top_labels", "top_labels_below"}) {
    const auto labelled = layer(spec, name);
    for (const auto& d : labelled.at("data").at("values")) ones += d.at("rank") == 1 ? 1 : 0;
  }
  CHECK(ones == 1);
}
