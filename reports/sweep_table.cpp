#include "reports/sweep_table.hpp"

#include <optional>
#include <sstream>
#include <vector>

#include "reports/sweep_report.hpp"
#include "reports/text_format.hpp"
#include "reports/text_table.hpp"

namespace moesim {

namespace {

// Every path a point sets: the axes in their order, then included points' other paths.
std::vector<std::string> value_paths(const nlohmann::json& doc) {
  std::vector<std::string> out;
  for (const auto& a : doc.at("axes")) out.push_back(a.at("path").get<std::string>());
  for (const auto& p : doc.at("points")) {
    for (const auto& [path, v] : p.at("values").items()) {
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
  }
  return out;
}

// A path's column header: its last component, or the whole path where two paths share it.
std::string header_of(const std::string& path, const std::vector<std::string>& paths) {
  const auto last = [](const std::string& p) { return p.substr(p.rfind('.') + 1); };
  for (const auto& other : paths) {
    if (other != path && last(other) == last(path)) return path;
  }
  return last(path);
}

// Numbers align right, words left.
Align numeric_axis(const nlohmann::json& points, const std::string& path) {
  for (const auto& p : points) {
    const auto& values = p.at("values");
    if (values.contains(path) && !values.at(path).is_number()) return Align::left;
  }
  return Align::right;
}

// "#index path=value ..." in the table's column order.
std::string point_label(const nlohmann::json& p, const std::vector<std::string>& paths) {
  // Appended piece by piece: gcc 12's -Wrestrict misfires on `"literal" + std::string`.
  std::string out = "#";
  out += p.at("index").dump();
  for (const auto& path : paths) {
    if (!p.at("values").contains(path)) continue;
    out += ' ';
    out += path;
    out += '=';
    out += json_value_text(p.at("values").at(path));
  }
  return out;
}

struct Counts {
  std::size_t fit = 0, oom = 0, invalid = 0;
  std::optional<std::size_t> best;  // position in points of the highest-MFU point that fits
};

Counts count_points(const nlohmann::json& points) {
  Counts c;
  double best_mfu = -1;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (p.at("status") != "ok") {
      ++c.invalid;
      continue;
    }
    const auto& r = p.at("result");
    if (r.at("oom").get<bool>()) {
      ++c.oom;
      continue;
    }
    ++c.fit;
    if (r.at("mfu").get<double>() > best_mfu) {
      best_mfu = r.at("mfu").get<double>();
      c.best = i;
    }
  }
  return c;
}

}  // namespace

std::string sweep_table(const nlohmann::json& doc) {
  const auto& points = doc.at("points");
  const auto paths = value_paths(doc);
  // A "design" axis already names each point's design; the result's column would repeat it.
  const bool design_axis = std::find(paths.begin(), paths.end(), "design") != paths.end();
  std::vector<TextColumn> columns = {{"#", Align::right}};
  for (const auto& path : paths) columns.push_back({header_of(path, paths), numeric_axis(points, path)});
  if (!design_axis) columns.push_back({"design", Align::left});
  for (const char* header : {"MFU", "tok/s/GPU", "step ms", "memory GiB", "of GiB"})
    columns.push_back({header, Align::right});
  columns.push_back({"peak phase", Align::left});
  columns.push_back({"verdict", Align::left});
  const std::size_t column_count = columns.size();
  TextTable table(std::move(columns));
  std::ostringstream invalid;
  for (const auto& p : points) {
    std::vector<std::string> row = {p.at("index").dump()};
    for (const auto& path : paths)
      row.push_back(p.at("values").contains(path) ? json_value_text(p.at("values").at(path)) : "");
    if (p.at("status") != "ok") {
      row.resize(column_count - 1);  // blank result cells, then the verdict
      row.push_back("invalid");
      invalid << "  #" << p.at("index").dump() << ": " << p.at("error").get<std::string>() << "\n";
    } else {
      const auto& r = p.at("result");
      if (!design_axis) row.push_back(r.at("design").get<std::string>());
      row.push_back(fmt("%.1f%%", 100 * r.at("mfu").get<double>()));
      row.push_back(fmt("%.0f", r.at("tokens_per_s_per_gpu").get<double>()));
      row.push_back(fmt("%.1f", 1e3 * r.at("step_time_s").get<double>()));
      row.push_back(fmt("%.1f", r.at("device_total_GiB").get<double>()));
      row.push_back(fmt("%.1f", r.at("capacity_GiB").get<double>()));
      row.push_back(r.at("breaking_phase").get<std::string>());
      row.push_back(r.at("oom").get<bool>() ? "OOM" : "fits");
    }
    table.add(std::move(row));
  }
  std::ostringstream os;
  os << table.render();
  if (!invalid.str().empty()) os << "invalid points:\n" << invalid.str();
  const Counts c = count_points(points);
  os << points.size() << " point(s): " << c.fit << " fit, " << c.oom << " out of memory, " << c.invalid << " invalid\n";
  if (c.best) {
    const auto& best = points[*c.best];
    const auto& r = best.at("result");
    os << "best MFU that fits: " << point_label(best, paths) << "  "
       << (design_axis ? std::string() : r.at("design").get<std::string>() + "  ") << "MFU "
       << fmt("%.1f%%", 100 * r.at("mfu").get<double>()) << ", "
       << fmt("%.0f", r.at("tokens_per_s_per_gpu").get<double>()) << " tok/s/GPU\n";
  } else if (!points.empty()) {
    os << "no point fits in memory\n";
  }
  return os.str();
}

std::string compare_table(const CompareResult& result) {
  std::ostringstream os;
  os << sweep_table(sweep_json("", SweepSpec{}, result.points));
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
