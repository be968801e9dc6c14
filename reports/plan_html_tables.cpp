// The plan page's tables, from a moesim-plan/1 document (reports/plan_html_tables.hpp).
#include "reports/plan_html_tables.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "reports/html_page.hpp"
#include "reports/text_format.hpp"

namespace moesim {

namespace {

const char* const kStatuses[] = {"replayed", "pruned_by_memory", "pruned_by_bound"};

struct Column {
  const char* head;
  bool numeric;  // right-aligned
};

// A <table class="plan NAME"> with one <tr> per row; cells are plain text, escaped here.
std::string table_html(const std::string& name, const std::vector<Column>& columns,
                       const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<div class=\"table-box\"><table class=\"plan " + name + "\" id=\"" + name + "\">\n<thead><tr>";
  for (const auto& c : columns)
    out +=
        std::string("<th scope=\"col\"") + (c.numeric ? " class=\"num\"" : "") + ">" + html::escape(c.head) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i)
      out +=
          std::string("<td") + (columns.at(i).numeric ? " class=\"num\"" : "") + ">" + html::escape(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

// 53199.9 -> "53,200": throughputs and token counts as a reader writes them.
std::string grouped(double value) {
  const long long whole = std::llround(value);
  const std::string digits = std::to_string(whole < 0 ? -whole : whole);
  std::string out = whole < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(double fraction) { return fmt("%.1f%%", 100 * fraction); }
std::string gib(double v) { return fmt("%.1f", v); }
std::string seconds(double v) { return fmt("%.3f", v); }

// Appended, not "#" + std::to_string(...): GCC 12 at -O3 warns (-Wrestrict) on that form.
std::string candidate_text(long long candidate) {
  std::string out = "#";
  out += std::to_string(candidate);
  return out;
}

// The axis names of the document's space, in order.
std::vector<std::string> axis_order(const DocumentNode& doc) {
  std::vector<std::string> axes;
  for (const auto& a : doc.at("space").elements()) axes.push_back(a.at("axis").string());
  return axes;
}

// "design=ddp · ep=8 · pp=1": the space's axes first, then any other value the plan sets.
std::string values_text(const DocumentNode& values, const std::vector<std::string>& axes) {
  if (!values.json().is_object()) values.fail(std::string("expected an object, found ") + values.json().type_name());
  std::string out;
  const auto add = [&](const std::string& key) {
    out += (out.empty() ? "" : " \xC2\xB7 ") + key + "=" + json_value_text(values.json().at(key));
  };
  for (const auto& a : axes)
    if (values.has(a)) add(a);
  for (const auto& [key, v] : values.json().items())
    if (std::find(axes.begin(), axes.end(), key) == axes.end()) add(key);
  return out;
}

std::string objective_text(const DocumentNode& objective) {
  const std::string& o = objective.string();
  if (o == "tokens_per_s") return "tokens/s/GPU (highest first)";
  if (o == "mfu") return "MFU (highest first)";
  if (o == "memory_headroom") return "memory headroom (largest first)";
  objective.fail("\"" + o + "\" is not an objective; allowed: tokens_per_s, mfu, memory_headroom");
}

// "2 nodes of 8 GPUs", or "nodes of 8 GPUs" when the count does not fill whole nodes.
std::string nodes_text(long long gpus, long long per_node) {
  const std::string of = "of " + std::to_string(per_node) + " GPUs";
  if (per_node <= 0 || gpus % per_node != 0) return "nodes " + of;
  const long long nodes = gpus / per_node;
  return std::to_string(nodes) + (nodes == 1 ? " node " : " nodes ") + of;
}

}  // namespace

const PlanRow& plan_of(const std::vector<PlanRow>& plans, const DocumentNode& candidate) {
  const long long wanted = candidate.integer();
  for (const auto& p : plans)
    if (p.candidate == wanted) return p;
  candidate.fail("candidate " + std::to_string(wanted) + " is not one of the document's plans");
}

std::vector<PlanRow> plan_rows(const DocumentNode& doc) {
  const auto axes = axis_order(doc);
  std::vector<PlanRow> rows;
  for (const auto& p : doc.at("plans").elements()) {
    PlanRow row;
    row.candidate = p.at("candidate").integer();
    row.design = p.at("design").string();
    row.values_text = values_text(p.at("values"), axes);
    row.status = p.at("status").string();
    if (std::find(std::begin(kStatuses), std::end(kStatuses), row.status) == std::end(kStatuses))
      p.at("status").fail("\"" + row.status +
                          "\" is not a status; allowed: replayed, pruned_by_memory, pruned_by_bound");
    row.fits = p.at("fits").boolean();
    row.peak_reserved_GiB = p.at("peak_reserved_GiB").number();
    row.headroom_GiB = p.at("headroom_GiB").number();
    row.bound_step_time_s = p.at("bound_step_time_s").number();
    row.bound_tokens_per_s_per_gpu = p.at("bound_tokens_per_s_per_gpu").number();
    row.replayed = row.status == "replayed";
    if (row.replayed) {
      row.step_time_s = p.at("step_time_s").number();
      row.tokens_per_s_per_gpu = p.at("tokens_per_s_per_gpu").number();
      row.mfu = p.at("mfu").number();
      row.largest_exposed_phase = p.at("largest_exposed_phase").string();
      if (!p.at("rank").is_null()) row.rank = p.at("rank").integer();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string request_tables_html(const DocumentNode& doc) {
  const auto request = doc.at("request");
  const long long gpus = request.at("gpus").integer(), per_node = request.at("gpus_per_node").integer();
  std::vector<std::vector<std::string>> asked = {
      {"GPUs", std::to_string(gpus) + " (" + nodes_text(gpus, per_node) + ")"},
      {"global batch", grouped(static_cast<double>(request.at("global_batch_tokens").integer())) + " tokens per step"},
      {"ranked by", objective_text(request.at("objective"))},
      {"top K", std::to_string(request.at("top_k").integer())}};
  for (const auto& a : doc.at("space").elements()) {
    std::string values;
    for (const auto& v : a.at("values").elements()) values += (values.empty() ? "" : ", ") + json_value_text(v.json());
    asked.push_back({"axis " + a.at("axis").string(), values});
  }
  const auto counts = doc.at("counts");
  const std::vector<std::pair<const char*, const char*>> count_rows = {
      {"enumerated", "enumerated (the product of the axes)"},
      {"refused_by_rule", "refused by a rule (reasons below)"},
      {"pruned_by_memory", "pruned by the memory ledger (OOM)"},
      {"pruned_by_bound", "pruned by the step-time lower bound (cannot enter the top K)"},
      {"replayed", "replayed"}};
  std::vector<std::vector<std::string>> counted;
  for (const auto& [key, text] : count_rows) counted.push_back({text, std::to_string(counts.at(key).integer())});
  std::vector<std::vector<std::string>> refused;
  for (const auto& r : doc.at("refusals").elements())
    refused.push_back({r.at("reason").string(), std::to_string(r.at("count").integer())});
  std::string out = table_html("request-table", {{"request", false}, {"", false}}, asked);
  out += table_html("counts-table", {{"candidates", false}, {"count", true}}, counted);
  if (refused.empty()) return out + "<p class=\"hint\">No candidate was refused by a rule.</p>\n";
  return out + table_html("refusals-table", {{"refused because", false}, {"candidates", true}}, refused);
}

std::string top_table_html(const DocumentNode& doc, const std::vector<PlanRow>& plans) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : doc.at("top").elements()) {
    const PlanRow& p = plan_of(plans, t.at("candidate"));
    rows.push_back({std::to_string(t.at("rank").integer()), p.design + " (" + candidate_text(p.candidate) + ")",
                    p.values_text, grouped(p.tokens_per_s_per_gpu), percent(p.mfu), seconds(p.step_time_s),
                    gib(p.peak_reserved_GiB), gib(p.headroom_GiB), p.largest_exposed_phase});
  }
  if (rows.empty()) return "<p class=\"hint\">No plan was replayed, so there is no top K.</p>\n";
  return table_html("top-table",
                    {{"rank", true},
                     {"design", false},
                     {"values", false},
                     {"tokens/s/GPU", true},
                     {"MFU", true},
                     {"step time (s)", true},
                     {"peak reserved (GiB)", true},
                     {"headroom (GiB)", true},
                     {"largest exposed phase", false}},
                    rows);
}

std::string runner_up_html(const DocumentNode& doc, const std::vector<PlanRow>& plans) {
  const auto versus = doc.at("best_vs_runner_up");
  if (versus.is_null()) return "<p class=\"hint\">Fewer than two plans were replayed: no runner-up to compare.</p>\n";
  const PlanRow& best = plan_of(plans, versus.at("best"));
  const PlanRow& runner_up = plan_of(plans, versus.at("runner_up"));
  std::vector<std::vector<std::string>> rows;
  for (const auto& ph : versus.at("phases").elements()) {
    rows.push_back({ph.at("phase").string(), seconds(ph.at("best_s").number()), seconds(ph.at("runner_up_s").number()),
                    fmt("%+.3f", ph.at("difference_s").number())});
  }
  const double difference = versus.at("step_time_difference_s").number();  // runner-up minus best
  const std::string summary = "Best " + best.design + " (" + candidate_text(best.candidate) + ", " +
                              seconds(best.step_time_s) + " s per step) against the runner-up " + runner_up.design +
                              " (" + candidate_text(runner_up.candidate) + ", " + seconds(runner_up.step_time_s) +
                              " s): the runner-up's step is " + fmt("%.3f", std::fabs(difference)) +
                              (difference >= 0 ? " s longer." : " s shorter.");
  return "<p id=\"runner-up-summary\">" + html::escape(summary) + "</p>\n" +
         table_html("runner-up-table",
                    {{"phase", false},
                     {"best, exposed (s)", true},
                     {"runner-up, exposed (s)", true},
                     {"runner-up \xE2\x88\x92 best (s)", true}},
                    rows);
}

std::string families_table_html(const DocumentNode& doc) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : doc.at("families").elements()) {
    if (f.at("candidate").is_null()) {
      rows.push_back({f.at("family").string(), "no replayed plan", "", ""});
      continue;
    }
    rows.push_back({f.at("family").string(),
                    f.at("design").string() + " (" + candidate_text(f.at("candidate").integer()) + ")",
                    grouped(f.at("tokens_per_s_per_gpu").number()), percent(f.at("relative_to_best").number())});
  }
  return table_html("families-table",
                    {{"design family", false}, {"its best plan", false}, {"tokens/s/GPU", true}, {"of the best", true}},
                    rows);
}

std::string plans_table_html(const std::vector<PlanRow>& plans) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : plans) {
    rows.push_back({candidate_text(p.candidate), p.design, p.values_text, p.status, p.fits ? "fits" : "OOM",
                    gib(p.peak_reserved_GiB), gib(p.headroom_GiB), grouped(p.bound_tokens_per_s_per_gpu),
                    p.replayed ? grouped(p.tokens_per_s_per_gpu) : "", p.replayed ? percent(p.mfu) : "",
                    p.rank ? std::to_string(*p.rank) : ""});
  }
  return table_html("plans-table",
                    {{"candidate", true},
                     {"design", false},
                     {"values", false},
                     {"status", false},
                     {"memory", false},
                     {"peak reserved (GiB)", true},
                     {"headroom (GiB)", true},
                     {"bound tokens/s/GPU (upper)", true},
                     {"tokens/s/GPU", true},
                     {"MFU", true},
                     {"rank", true}},
                    rows);
}

}  // namespace moesim
