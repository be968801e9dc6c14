// Sweep and comparison documents: JSON (schema moesim-sweep/1, see reports/README.md) and CSV
// with stable headline columns. Observers only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/compare.hpp"
#include "studies/sweep.hpp"

namespace moesim {

nlohmann::json sweep_json(const std::string& scenario_name, const SweepSpec& spec, const SweepResult& result);
// One point as it appears in the document's "points" array.
nlohmann::json sweep_point_json(const SweepPoint& point);
// What a sink renders of each point: the whole document, or only what the listing and the CSV
// read (a sweep written to neither JSON nor HTML; step_headline_json).
enum class PointDetail { full, headline };
// The same, taking the point's resolved inputs instead of copying them (a sweep's sink).
nlohmann::json sweep_point_json(SweepPoint&& point, PointDetail detail = PointDetail::full);
// The document from points already rendered (e.g. gathered from several MPI ranks).
nlohmann::json sweep_document(const std::string& scenario_name, const SweepSpec& spec, nlohmann::json points);
// CSV (and the text table, reports/sweep_table.hpp) are rendered from the document, so every
// path writes the same bytes.
std::string sweep_csv(const nlohmann::json& document);
// The CSV in pieces, for a sweep written as its points finish: sweep_csv is the header and then
// one row per point.
std::string sweep_csv_header();
std::string sweep_csv_row(const nlohmann::json& point);
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
