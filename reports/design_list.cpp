#include "reports/design_list.hpp"

#include <sstream>

#include "models/plan/designs/design.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

// "+epN, +nodistopt": the parts a design takes after its word.
std::string parts_text(const DesignEntry& entry) {
  std::string out;
  for (const GrammarPart& part : entry.parts()) {
    out += (out.empty() ? "+" : ", +") + std::string(part.word) + (part.numbered ? "N" : "");
  }
  return out.empty() ? "-" : out;
}

std::string families_text(const DesignEntry& entry) {
  std::string out;
  for (const PlannerFamily& f : entry.families()) {
    out += (out.empty() ? "" : ", ") + std::string(f.name) + (f.searched_by_default ? "" : " (on request)");
  }
  return out;
}

}  // namespace

std::string designs_table() {
  TextTable table({{"design", Align::left},
                   {"plan.design", Align::left},
                   {"parts", Align::left},
                   {"planner families", Align::left},
                   {"parameter sync", Align::left}});
  std::ostringstream notes;
  for (const auto& name : design_entries().registration_order()) {
    const DesignEntry& entry = design_entries().get(name);
    table.add(
        {name, std::string(entry.word()), parts_text(entry), families_text(entry), std::string(entry.param_sync())});
    notes << "  " << name << ": " << entry.description() << "\n";
  }
  return table.render() + "\n" + notes.str();
}

nlohmann::json designs_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : design_entries().registration_order()) {
    const DesignEntry& entry = design_entries().get(name);
    nlohmann::json parts = nlohmann::json::array(), families = nlohmann::json::array();
    for (const GrammarPart& part : entry.parts()) {
      parts.push_back({{"part", part.word}, {"path", part.path}, {"numbered", part.numbered}});
    }
    for (const PlannerFamily& f : entry.families()) {
      families.push_back({{"name", f.name}, {"searched_by_default", f.searched_by_default}});
    }
    out.push_back({{"name", name},
                   {"word", entry.word()},
                   {"description", entry.description()},
                   {"parts", parts},
                   {"planner_families", families},
                   {"param_sync", entry.param_sync()}});
  }
  return {{"schema", "moesim-designs/1"}, {"designs", out}};
}

}  // namespace moesim
