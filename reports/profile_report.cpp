#include "reports/profile_report.hpp"

#include <map>
#include <sstream>

#include "reports/text_table.hpp"

namespace moesim {

namespace {

std::string counts_text(const ProfileProvenance& p) {
  std::string text;
  for (const auto& [kind, n] : p.by_kind) text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  return text;
}

// "3 fitted", "1 published, 2 assumption": its fields by kind.
std::string kinds_of(const KernelClassProvenance& k) {
  std::map<std::string, std::size_t> n;
  for (const auto* e : k.fields) ++n[e->kind];
  std::string text;
  for (const auto& [kind, count] : n) text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
  return text.empty() ? "not in this profile" : text;
}

}  // namespace

std::string profile_provenance_table(const ProfileProvenance& p, std::size_t source_width) {
  std::ostringstream os;
  os << "profile " << p.name << " (" << p.file << ")\n";
  if (!p.description.empty()) os << p.description << "\n";
  os << "\n" << p.entries.size() << " fields with a provenance: " << counts_text(p) << "\n";
  os << "the kernels that dominate a step's compute:\n";
  for (const auto& k : p.dominant) {
    os << "  " << k.kernel_class << ": " << kinds_of(k)
       << (k.rests_on_assumption() ? "  <- rests on an assumption: predictions of compute-bound steps carry it" : "")
       << "\n";
  }
  os << "\n";
  TextTable t({{"field", Align::left}, {"value", Align::right}, {"kind", Align::left}, {"source", Align::left}});
  for (const auto& e : p.entries) {
    std::string source = e.source;
    if (source_width > 3 && source.size() > source_width) source = source.substr(0, source_width - 3) + "...";
    t.add({e.path, e.value, e.kind, source});
  }
  os << t.render();
  if (source_width > 0) os << "(sources cut at " << source_width << " characters; --full or --json for all of them)\n";
  return os.str();
}

nlohmann::json profile_provenance_json(const ProfileProvenance& p) {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& e : p.entries)
    fields.push_back({{"path", e.path}, {"value", e.value}, {"kind", e.kind}, {"source", e.source}});
  nlohmann::json dominant = nlohmann::json::array();
  for (const auto& k : p.dominant) {
    nlohmann::json paths = nlohmann::json::array();
    for (const auto* e : k.fields) paths.push_back({{"path", e->path}, {"kind", e->kind}});
    dominant.push_back(
        {{"kernel_class", k.kernel_class}, {"fields", paths}, {"rests_on_assumption", k.rests_on_assumption()}});
  }
  return {{"schema", "moesim-profile-provenance/1"},
          {"profile", p.name},
          {"file", p.file},
          {"description", p.description},
          {"by_kind", p.by_kind},
          {"dominant_kernels", dominant},
          {"fields", fields}};
}

}  // namespace moesim
