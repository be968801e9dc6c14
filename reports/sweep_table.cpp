#include "reports/sweep_table.hpp"

#include <algorithm>
#include <sstream>

#include "reports/sweep_report.hpp"
#include "reports/text_format.hpp"

namespace moesim {

namespace {

// A path's column header: its last component, or the whole path where two paths share it.
std::string header_of(const std::string& path, const std::vector<std::string>& paths) {
  const auto last = [](const std::string& p) { return p.substr(p.rfind('.') + 1); };
  for (const auto& other : paths) {
    if (other != path && last(other) == last(path)) return path;
  }
  return last(path);
}

}  // namespace

SweepListing::SweepListing(const nlohmann::json& axes) {
  for (const auto& a : axes) note_value(a.at("path").get<std::string>(), 0);
}

void SweepListing::note_value(const std::string& path, const nlohmann::json& value) {
  if (std::find(paths_.begin(), paths_.end(), path) == paths_.end()) paths_.push_back(path);
  auto [it, added] = numeric_.emplace(path, true);
  it->second = it->second && value.is_number();  // numbers align right, words left
}

void SweepListing::scan(const PointOverrides& values) {
  for (const auto& [path, v] : values) note_value(path, v);
}

void SweepListing::scan(const PointList& points) {
  for (const auto& axis : points.axes())
    for (const auto& v : axis.values) note_value(axis.path, v);
  for (const auto& p : points.extra()) scan(p);
}

void SweepListing::scan_json(const nlohmann::json& values) {
  for (const auto& [path, v] : values.items()) note_value(path, v);
}

void SweepListing::start_table() {
  // A "design" axis already names each point's design; the result's column would repeat it.
  design_axis_ = std::find(paths_.begin(), paths_.end(), "design") != paths_.end();
  std::vector<TextColumn> columns = {{"#", Align::right}};
  for (const auto& path : paths_)
    columns.push_back({header_of(path, paths_), numeric_.at(path) ? Align::right : Align::left});
  if (!design_axis_) columns.push_back({"design", Align::left});
  for (const char* header : {"MFU", "tok/s/GPU", "step ms", "memory GiB", "of GiB"})
    columns.push_back({header, Align::right});
  columns.push_back({"peak phase", Align::left});
  columns.push_back({"verdict", Align::left});
  column_count_ = columns.size();
  table_.emplace(std::move(columns));
}

// "#index path=value ..." in the table's column order, appended piece by piece (gcc 12's
// -Wrestrict misfires on `"literal" + std::string`).
std::string SweepListing::label(std::size_t index, const PointOverrides& values) const {
  std::string out = "#";
  out += std::to_string(index);
  for (const auto& path : paths_) {
    const auto it = std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == path; });
    if (it == values.end()) continue;
    out += ' ';
    out += path;
    out += '=';
    out += json_value_text(it->second);
  }
  return out;
}

void SweepListing::add(const nlohmann::json& p) {
  if (!table_) start_table();
  const bool listed = ++rows_ <= kListedPoints;
  std::vector<std::string> row = {p.at("index").dump()};
  for (const auto& path : paths_)
    row.push_back(p.at("values").contains(path) ? json_value_text(p.at("values").at(path)) : "");
  if (p.at("status") != "ok") {
    if (invalid_.size() < kListedPoints) {
      std::string reason = "#";
      reason += p.at("index").dump();
      reason += ": ";
      reason += p.at("error").get<std::string>();
      invalid_.push_back(std::move(reason));
    }
    row.resize(column_count_ - 1);  // blank result cells, then the verdict
    row.push_back("invalid");
    if (listed) table_->add(std::move(row));
    return;
  }
  const auto& r = p.at("result");
  if (!design_axis_) row.push_back(r.at("design").get<std::string>());
  row.push_back(fmt("%.1f%%", 100 * r.at("mfu").get<double>()));
  row.push_back(fmt("%.0f", r.at("tokens_per_s_per_gpu").get<double>()));
  row.push_back(fmt("%.1f", 1e3 * r.at("step_time_s").get<double>()));
  row.push_back(fmt("%.1f", r.at("device_total_GiB").get<double>()));
  row.push_back(fmt("%.1f", r.at("capacity_GiB").get<double>()));
  row.push_back(r.at("breaking_phase").get<std::string>());
  row.push_back(r.at("oom").get<bool>() ? "OOM" : "fits");
  if (listed) table_->add(std::move(row));
}

std::string SweepListing::render(const SweepTally& tally) const {
  std::ostringstream os;
  if (table_) os << table_->render();
  if (rows_ > kListedPoints)
    os << "... " << rows_ - kListedPoints << " more point(s) not listed here (--csv and --json write every point)\n";
  if (!invalid_.empty()) os << "invalid points:\n";
  for (const auto& reason : invalid_) os << "  " << reason << "\n";
  if (tally.invalid > invalid_.size()) os << "  ... " << tally.invalid - invalid_.size() << " more\n";
  os << tally.points << " point(s): " << tally.fit << " fit, " << tally.oom << " out of memory, " << tally.invalid
     << " invalid\n";
  if (tally.best) {
    const SweepBest& b = *tally.best;
    std::string line = label(b.index, b.values);
    line += "  ";
    if (!design_axis_) {
      line += b.design;
      line += "  ";
    }
    line += "MFU " + fmt("%.1f%%", 100 * b.mfu);
    line += ", " + fmt("%.0f", b.tokens_per_s_per_gpu);
    line += " tok/s/GPU";
    os << "best MFU that fits: " << line << "\n";
  } else if (tally.points > 0) {
    os << "no point fits in memory\n";
  }
  return os.str();
}

SweepListing listing_of(const nlohmann::json& doc) {
  SweepListing listing(doc.at("axes"));
  for (const auto& p : doc.at("points")) listing.scan_json(p.at("values"));
  for (const auto& p : doc.at("points")) listing.add(p);
  return listing;
}

std::string compare_findings(const CompareResult& result) {
  std::ostringstream os;
  for (const auto& c : result.crossovers) {
    os << "crossover " << c.ddp_design << " vs " << c.fsdp_design << ": ";
    if (c.global_batch_tokens)
      os << c.ddp_design << " reaches " << c.fsdp_design << "'s MFU at a global batch of " << *c.global_batch_tokens
         << " tokens\n";
    else
      os << c.note << "\n";
  }
  for (const auto& w : result.walls) {
    os << "expert wall " << w.design << ": ";
    if (w.largest_fitting_experts) os << "largest N that fits " << *w.largest_fitting_experts;
    if (w.first_oom_experts) os << ", OOM at " << *w.first_oom_experts;
    if (!w.note.empty())
      os << (w.largest_fitting_experts ? " (" : "") << w.note << (w.largest_fitting_experts ? ")" : "");
    os << "\n";
  }
  return os.str();
}

}  // namespace moesim
