// Sweep and comparison documents: JSON (schema moesim-sweep/1, see reports/README.md) and CSV
// with stable headline columns. Observers only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "studies/compare.hpp"
#include "studies/sweep.hpp"

namespace moesim {

nlohmann::json sweep_json(const std::string& scenario_name, const SweepSpec& spec, const SweepResult& result);
// One point as it appears in the document's "points" array.
nlohmann::json sweep_point_json(const SweepPoint& point);
// What a sink renders of each point: the whole step document with the point's resolved inputs
// (full), the step document without them (summary: the document's own "inputs" and the point's
// "values" say what ran), or only what the listing and the CSV read (headline: a sweep written
// to neither JSON nor HTML; step_headline_json).
enum class PointDetail { full, summary, headline };
// "full" or "summary" (`sweep --detail`); throws InputError naming --detail otherwise.
PointDetail parse_point_detail(const std::string& name);
// The same, taking the point's resolved inputs instead of copying them (a sweep's sink).
nlohmann::json sweep_point_json(SweepPoint&& point, PointDetail detail = PointDetail::full);
// The document from points already rendered (e.g. gathered from several MPI ranks). With
// `inputs` (the base scenario's resolved inputs, for summary points) the document carries them
// once, with "detail": "summary".
nlohmann::json sweep_document(const std::string& scenario_name, const SweepSpec& spec, nlohmann::json points,
                              const nlohmann::json& inputs = nullptr);
// CSV (and the text table, reports/sweep_table.hpp) are rendered from the document, so every
// path writes the same bytes.
std::string sweep_csv(const nlohmann::json& document);
// The CSV's varied-value columns: one per varied path (the axes' paths, then paths only included
// points set), named by the path's last key, by the whole path where two last keys or a headline
// column would clash, and "axis." + path where even that clashes ("design").
struct CsvValueColumn {
  std::string path, name;
};
std::vector<CsvValueColumn> csv_value_columns(const std::vector<std::string>& paths);
// The varied paths of a spec: its axes' paths, then paths its included points add.
std::vector<std::string> varied_paths(const SweepSpec& spec);
// The CSV in pieces, for a sweep written as its points finish: sweep_csv is the header and then
// one row per point.
std::string sweep_csv_header(const std::vector<CsvValueColumn>& columns);
std::string sweep_csv_row(const nlohmann::json& point, const std::vector<CsvValueColumn>& columns);
// A CSV cell: quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_cell(std::string s);
// The document's "axes": each axis's path and values.
nlohmann::json sweep_axes_json(const SweepSpec& spec);
// The document's "summary": how many points, how many of them invalid.
nlohmann::json sweep_summary(std::size_t points, std::size_t invalid);

// `designs`: the designs' point documents (the "points" of the comparison's sweep document), so
// that each design's result is rendered once for the JSON, CSV, HTML and listing.
nlohmann::json compare_json(const std::string& scenario_name, const CompareResult& result, nlohmann::json designs);

}  // namespace moesim
