// Builds the frontier chart's Vega-Lite spec from a moesim-plan/1 document. It selects and
// labels the document's own numbers; nothing here estimates a cost.
#include "reports/plan_frontier_chart.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "reports/plan_html_tables.hpp"

namespace moesim {

namespace {

using nlohmann::json;

// One colour per kind of mark; the legend lists them in this order. The OOM red and the dark
// grey of reference lines are the sweep page's (reports/html/charts_marks.js).
const char* const kReplayed = "replayed plan";
const char* const kTop = "top K (labelled with their rank)";
const char* const kFrontier = "Pareto frontier of the plans that fit";
const char* const kOom = "memory-pruned (OOM) plan, y = upper bound (step-time bound)";
const char* const kCapacity = "usable capacity per GPU";

json legend_scale() {
  return {{"domain", {kReplayed, kTop, kFrontier, kOom, kCapacity}},
          {"range", {"#5b9bd5", "#1f4e79", "#548235", "#b3261e", "#595959"}}};
}

// A plan as a chart datum at (GiB, tokens/s/GPU).
json datum(const PlanRow& plan, double tokens_per_s, const char* kind) {
  json d = {{"candidate", plan.candidate},
            {"design", plan.design},
            {"values", plan.values_text},
            {"GiB", plan.peak_reserved_GiB},
            {"headroom_GiB", plan.headroom_GiB},
            {"tokens_per_s_per_gpu", tokens_per_s},
            {"kind", kind}};
  if (plan.replayed) {
    d["mfu"] = plan.mfu;
    d["step_time_s"] = plan.step_time_s;
  }
  if (plan.rank) {
    // "#rank" alone: plans near each other on the chart wrote their designs over each other; the
    // tooltip and the top table name the design.
    std::string label = "#";  // appended: "#" + std::to_string(...) draws GCC 12's -Wrestrict at -O3
    label += std::to_string(*plan.rank);
    d["label"] = label;
    d["rank"] = *plan.rank;
  }
  return d;
}

// The search's memory frontier (studies/plan_search.cpp), as the document lists it by candidate;
// a document written before it carried one draws none.
json frontier(const DocumentNode& doc, const std::vector<PlanRow>& plans) {
  json out = json::array();
  if (!doc.has("frontier")) return out;
  for (const auto& candidate : doc.at("frontier").elements()) {
    const PlanRow& p = plan_of(plans, candidate);
    out.push_back(datum(p, p.tokens_per_s_per_gpu, kFrontier));
  }
  return out;
}

json tooltip() {
  return json::array({{{"field", "candidate"}, {"title", "candidate"}},
                      {{"field", "design"}, {"title", "design"}},
                      {{"field", "values"}, {"title", "values"}},
                      {{"field", "kind"}, {"title", "kind"}},
                      {{"field", "tokens_per_s_per_gpu"}, {"title", "tokens/s/GPU"}, {"format", ",.0f"}},
                      {{"field", "mfu"}, {"title", "MFU"}, {"format", ".1%"}},
                      {{"field", "step_time_s"}, {"title", "step (s)"}, {"format", ".3f"}},
                      {{"field", "GiB"}, {"title", "peak reserved GiB"}, {"format", ".1f"}},
                      {{"field", "headroom_GiB"}, {"title", "headroom GiB"}, {"format", ".1f"}}});
}

json layer(const char* name, json values, json mark, json encoding) {
  return {{"name", name},
          {"data", {{"values", std::move(values)}}},
          {"mark", std::move(mark)},
          {"encoding", std::move(encoding)}};
}

}  // namespace

json plan_capacity_GiB(const DocumentNode& doc) {
  for (const auto& top : doc.at("top").elements()) {
    const auto point = top.at("point");
    if (point.has("result") && point.at("result").has("capacity_GiB"))
      return point.at("result").at("capacity_GiB").number();
  }
  const auto plans = doc.at("plans").elements();
  if (plans.empty()) return nullptr;
  return plans.front().at("peak_reserved_GiB").number() + plans.front().at("headroom_GiB").number();
}

json plan_frontier_chart(const DocumentNode& doc) {
  const std::vector<PlanRow> plans = plan_rows(doc);
  const json capacity = plan_capacity_GiB(doc);
  // The memory axis spans the replayed plans and the capacity, and a quarter more: memory-pruned
  // plans beyond are counted in the chart's subtitle, not drawn (thousands of them at several
  // times the capacity buried the plans that fit).
  double reach = capacity.is_null() ? 0.0 : capacity.get<double>();
  for (const auto& p : plans)
    if (p.replayed) reach = std::max(reach, p.peak_reserved_GiB);
  constexpr double kMemoryMargin = 1.25;
  const double memory_limit = reach * kMemoryMargin;
  json replayed = json::array(), top = json::array(), oom = json::array();
  std::size_t beyond = 0;
  std::vector<long long> labelled;  // ranks already labelled: tied plans share a place and a label
  for (const auto& p : plans) {
    if (p.replayed) replayed.push_back(datum(p, p.tokens_per_s_per_gpu, kReplayed));
    if (p.replayed && p.rank && std::find(labelled.begin(), labelled.end(), *p.rank) == labelled.end()) {
      top.push_back(datum(p, p.tokens_per_s_per_gpu, kTop));
      labelled.push_back(*p.rank);
    }
    if (p.status != "pruned_by_memory") continue;
    if (reach > 0 && p.peak_reserved_GiB > memory_limit)
      ++beyond;
    else
      oom.push_back(datum(p, p.bound_tokens_per_s_per_gpu, kOom));
  }
  if (replayed.empty() && oom.empty()) return nullptr;
  const json x = {{"field", "GiB"},
                  {"type", "quantitative"},
                  {"title", "peak reserved memory per GPU (GiB, memory ledger)"},
                  {"scale", {{"zero", false}, {"padding", 16}}}};
  const json y = {{"field", "tokens_per_s_per_gpu"},
                  {"type", "quantitative"},
                  {"title", "tokens/s/GPU"},
                  {"scale", {{"zero", false}, {"padding", 16}}}};
  const json color = {{"field", "kind"},
                      {"type", "nominal"},
                      {"title", nullptr},
                      {"scale", legend_scale()},
                      {"legend", {{"orient", "bottom"}, {"direction", "vertical"}, {"labelLimit", 0}}}};
  // Scale padding (16 px) keeps a mark at the edge of the data whole inside the plot.
  // Mark sizes and offsets are in pixels, chosen as on the sweep page (reports/html/charts.js): a top-K
  // ring about twice a plan's dot, its label just above and right of it, dashes that read as a wall.
  json layers = json::array();
  if (!capacity.is_null()) {
    layers.push_back(
        layer("capacity", json::array({{{"GiB", capacity}, {"kind", kCapacity}}}),
              {{"type", "rule"}, {"strokeDash", {6, 4}}, {"strokeWidth", 2}},
              {{"x", x},
               {"color", color},
               {"tooltip", json::array({{{"field", "GiB"}, {"title", "usable GiB"}, {"format", ".1f"}}})}}));
  }
  const json frontier_points = frontier(doc, plans);
  if (!frontier_points.empty()) {
    layers.push_back(layer("frontier", frontier_points,
                           {{"type", "line"}, {"interpolate", "step-after"}, {"strokeWidth", 2}, {"point", true}},
                           {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip()}}));
  }
  const json marks = {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip()}};
  if (!replayed.empty())
    layers.push_back(layer("replayed", replayed, {{"type", "point"}, {"filled", true}, {"size", 70}}, marks));
  if (!top.empty()) {
    layers.push_back(
        layer("top", top, {{"type", "point"}, {"filled", false}, {"size", 260}, {"strokeWidth", 2.5}}, marks));
    // Odd ranks labelled above right, even ranks below right, so neighbours in the ranking (often
    // close on the chart) do not write over each other.
    json above = json::array(), below = json::array();
    for (const auto& d : top) (d.at("rank").get<long long>() % 2 == 1 ? above : below).push_back(d);
    const json label = {{"x", x}, {"y", y}, {"text", {{"field", "label"}}}};
    const auto text = [](int dy) {
      return json{{"type", "text"}, {"align", "left"}, {"dx", 12}, {"dy", dy}, {"fontWeight", "bold"}};
    };
    if (!above.empty()) layers.push_back(layer("top_labels", above, text(-10), label));
    if (!below.empty()) layers.push_back(layer("top_labels_below", below, text(16), label));
  }
  if (!oom.empty()) {
    layers.push_back(
        layer("oom_bound", oom, {{"type", "point"}, {"shape", "triangle-up"}, {"filled", true}, {"size", 110}}, marks));
  }
  // 720 px wide leaves room for the axis titles inside the page's 1200 px column.
  json spec = {{"width", 720}, {"height", 360}, {"layer", std::move(layers)}};
  if (beyond > 0) {
    spec["title"] = {{"text", ""},
                     {"subtitle", std::to_string(beyond) + " memory-pruned plan(s) above " +
                                      std::to_string(static_cast<long long>(memory_limit)) +
                                      " GiB per GPU are not drawn (the table lists them)"}};
  }
  return spec;
}

}  // namespace moesim
