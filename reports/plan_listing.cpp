// The plan search's terminal listing, rendered from its document.
#include <map>

#include "reports/plan_report.hpp"
#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

std::string cell(const nlohmann::json& values, const char* axis) {
  return values.contains(axis) ? json_value_text(values.at(axis)) : "-";
}

// The layer split: even, or balanced with the layers per virtual stage it chose.
std::string split_cell(const nlohmann::json& values) {
  std::string out = cell(values, "split");
  if (values.contains("layer_split")) {
    out += ' ';
    out += values.at("layer_split").dump();
  }
  return out;
}

// Path axes the user added with --search, as path=value pairs.
std::string other_axes(const nlohmann::json& values) {
  nlohmann::json others = nlohmann::json::object();
  for (const auto& [k, v] : values.items())
    if (k.find('.') != std::string::npos) others[k] = v;
  return assignments_text(others, " ");
}

// ", at least 8.0 GiB free" when the search asked to keep headroom.
std::string min_headroom_text(const nlohmann::json& request) {
  const double keep = request.at("min_headroom_GiB").get<double>();
  return keep > 0 ? ", at least " + fmt("%.1f", keep) + " GiB free (--min-headroom)" : "";
}

// The axes of `values` where `other` differs, comma-joined: "layout per_tensor vs concat_then_shard"
// (with_own) or "layout concat_then_shard"; an axis `other` lacks reads "-"; "" when none differs.
std::string axis_differences(const nlohmann::json& values, const nlohmann::json& other, bool with_own) {
  std::string out;
  for (const auto& [axis, v] : values.items()) {
    const std::string mine = json_value_text(v);
    const std::string theirs = other.contains(axis) ? json_value_text(other.at(axis)) : "-";
    if (theirs == mine) continue;
    out += (out.empty() ? "" : ", ") + axis + " " + (with_own ? mine + " vs " : std::string()) + theirs;
  }
  return out;
}

std::string headline(const nlohmann::json& doc) {
  const auto& q = doc.at("request");
  const auto& n = doc.at("counts");
  std::string out = "plan search for " + doc.at("scenario").get<std::string>() + ": " + q.at("gpus").dump() +
                    " GPUs (" + q.at("gpus_per_node").dump() + " per node), global batch " +
                    q.at("global_batch_tokens").dump() + " tokens, objective " + q.at("objective").get<std::string>() +
                    ", top " + q.at("top_k").dump() + min_headroom_text(q) + "\n";
  out += "candidates: " + n.at("enumerated").dump() + " enumerated; " + n.at("refused_by_rule").dump() +
         " refused by rule, " + n.at("pruned_by_memory").dump() + " pruned by memory (do not fit), " +
         n.at("pruned_by_bound").dump() + " pruned by the step-time bound, " + n.at("replayed").dump() + " replayed\n";
  for (const auto& r : doc.at("refusals"))
    out += "  refused " + r.at("count").dump() + ": " + r.at("reason").get<std::string>() + "\n";
  return out;
}

std::string top_table(const nlohmann::json& doc, const std::map<std::size_t, const nlohmann::json*>& plans) {
  TextTable table({{"rank", Align::right},
                   {"design"},
                   {"tp", Align::right},
                   {"ep", Align::right},
                   {"pp", Align::right},
                   {"schedule"},
                   {"split"},
                   {"microbatch", Align::right},
                   {"recompute"},
                   {"layout"},
                   {"tokens/s/GPU", Align::right},
                   {"MFU %", Align::right},
                   {"step s", Align::right},
                   {"peak GiB", Align::right},
                   {"headroom GiB", Align::right},
                   {"largest exposed"},
                   {"largest non-compute"},
                   {"other axes"},
                   {"same step with"}});
  // One row per place: plans tied with its first (the same step; they differ in axes that do not
  // change it, such as the optimizer layout) are named in its last column.
  const auto& top = doc.at("top");
  for (std::size_t k = 0; k < top.size(); ++k) {
    if (k > 0 && top[k].at("rank") == top[k - 1].at("rank")) continue;
    const nlohmann::json& p = *plans.at(top[k].at("candidate").get<std::size_t>());
    const auto& v = p.at("values");
    std::string ties;
    for (std::size_t j = k + 1; j < top.size() && top[j].at("rank") == top[k].at("rank"); ++j)
      ties += (ties.empty() ? "" : "; ") +
              axis_differences(v, plans.at(top[j].at("candidate").get<std::size_t>())->at("values"), false);
    table.add({top[k].at("rank").dump(), p.at("design").get<std::string>(), cell(v, "tp"), cell(v, "ep"), cell(v, "pp"),
               cell(v, "schedule"), split_cell(v), cell(v, "microbatch"), cell(v, "recompute"), cell(v, "layout"),
               fmt("%.0f", p.at("tokens_per_s_per_gpu").get<double>()), fmt("%.1f", 100 * p.at("mfu").get<double>()),
               fmt("%.3f", p.at("step_time_s").get<double>()), fmt("%.1f", p.at("peak_reserved_GiB").get<double>()),
               fmt("%.1f", p.at("headroom_GiB").get<double>()), p.at("largest_exposed_phase").get<std::string>(),
               p.at("largest_non_compute_phase").get<std::string>() + " " +
                   fmt("%.3f", p.at("largest_non_compute_s").get<double>()) + " s",
               other_axes(v), ties});
  }
  // Headroom counts what the caching allocator could release: its cached segments are room, so
  // peak reserved plus headroom can exceed the capacity (models/memory/ledger.cpp).
  return table.render() +
         "peak GiB: reserved at the worst stage's high-water mark; headroom GiB: capacity minus what the allocator "
         "must hold and the runtime reserves (cached segments it can release count as room, so peak + headroom may "
         "exceed the capacity; --min-headroom GiB keeps a margin)\n";
}

// One comparison of the best plan with another (`key`: best_vs_runner_up, best_vs_without_tp),
// named `other` in the text.
std::string comparison(const nlohmann::json& doc, const std::map<std::size_t, const nlohmann::json*>& plans,
                       const char* key, const std::string& other_name) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "";
  const auto& d = *it;
  const auto& best = *plans.at(d.at("best").get<std::size_t>());
  const auto& second = *plans.at(d.at("runner_up").get<std::size_t>());
  // What the two plans differ in, so that a tie (or a near tie) says which choice does not matter.
  const std::string differs = axis_differences(best.at("values"), second.at("values"), true);
  const double gap = d.at("step_time_difference_s").get<double>();
  std::string out = "best vs " + other_name + " (" + (differs.empty() ? std::string("same axes") : differs) + "): ";
  out += gap == 0  ? std::string("the same step time")
         : gap > 0 ? fmt("%.3f", gap) + " s per step faster"
                   : fmt("%.3f", -gap) + " s per step slower";
  std::string parts;
  std::size_t shown = 0;
  // The five largest differences: where the step time is won or lost.
  constexpr std::size_t kShown = 5;
  for (const auto& ph : d.at("phases")) {
    if (shown++ == kShown) break;
    parts += (parts.empty() ? "" : ", ") + ph.at("phase").get<std::string>() + " " +
             fmt("%+.3f", -ph.at("difference_s").get<double>()) + " s";
  }
  return out + (parts.empty() ? "\n" : "; exposed time, best minus " + other_name + ": " + parts + "\n");
}

std::string families(const nlohmann::json& doc) {
  std::string out = "best of each design family:\n";
  for (const auto& f : doc.at("families")) {
    out += "  " + f.at("family").get<std::string>() + ": ";
    if (f.at("candidate").is_null()) {
      out += "no fitting plan (or no candidate in the space)\n";
      continue;
    }
    out += f.at("design").get<std::string>() + ", " + fmt("%.0f", f.at("tokens_per_s_per_gpu").get<double>()) +
           " tokens/s/GPU (" + fmt("%.1f", 100 * f.at("relative_to_best").get<double>()) + "% of the best plan)";
    // The three phases where the best plan gains most on it.
    std::string gains;
    constexpr std::size_t kShown = 3;
    std::size_t shown = 0;
    for (const auto& ph : f.at("phases")) {
      if (shown++ == kShown) break;
      gains += (gains.empty() ? "" : ", ") + ph.at("phase").get<std::string>() + " " +
               fmt("%+.3f", -ph.at("difference_s").get<double>()) + " s";
    }
    out += gains.empty() ? "\n" : "; exposed time, best minus it: " + gains + "\n";
  }
  return out;
}

}  // namespace

std::string plan_listing(const nlohmann::json& doc) {
  std::map<std::size_t, const nlohmann::json*> plans;
  for (const auto& p : doc.at("plans")) plans[p.at("candidate").get<std::size_t>()] = &p;
  std::string out = headline(doc);
  if (doc.at("top").empty()) {
    const auto& n = doc.at("counts");
    const bool all_refused = n.at("refused_by_rule") == n.at("enumerated");
    return out + (all_refused ? "every candidate is refused (reasons above): no plan to rank\n"
                              : "no candidate fits in memory: no plan to rank\n");
  }
  return out + top_table(doc, plans) + comparison(doc, plans, "best_vs_runner_up", "runner-up") +
         comparison(doc, plans, "best_vs_without_tp", "the best without TP") + families(doc);
}

}  // namespace moesim
