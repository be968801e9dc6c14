#include "studies/published.hpp"

#include <algorithm>
#include <filesystem>

#include "models/common/json_reader.hpp"
#include "models/input/scenario.hpp"
#include "studies/validation.hpp"

namespace moesim {

namespace {

namespace fs = std::filesystem;

// One run a record describes: its composed scenario and what was measured on it.
struct RecordRun {
  Scenario scenario;
  PublishedMeasurement measured;
};

// What a record measured, from its "measured" object (the keys `moesim validate` compares).
void read_measured(const JsonReader& m, PublishedMeasurement& out) {
  const auto fraction = Range::between(0, 1);
  if (m.has("mfu")) out.mfu = m.number("mfu", fraction);
  if (m.has("tokens_per_s_per_gpu")) out.tokens_per_s_per_gpu = m.number("tokens_per_s_per_gpu", Range::positive());
  if (m.has("peak_allocated_GiB")) out.peak_allocated_GiB = m.number("peak_allocated_GiB", Range::positive());
  if (m.has("stage_peak_allocated_GiB")) {
    const auto stages = m.number_list("stage_peak_allocated_GiB", Range::positive());
    if (!stages.empty()) out.peak_allocated_GiB = *std::max_element(stages.begin(), stages.end());
  }
  if (m.has("oom")) out.oom = m.boolean("oom");
  if (m.has("mfu_min")) out.mfu_min = m.number("mfu_min", fraction);
  if (m.has("mfu_max")) out.mfu_max = m.number("mfu_max", fraction);
}

// The runs of one step or step_range record; none when its plan is impossible.
void record_runs(const JsonReader& rec, const nlohmann::json& raw, const std::string& dataset,
                 std::vector<RecordRun>& out) {
  PublishedMeasurement measured;
  measured.id = rec.string("id");
  measured.dataset = dataset;
  measured.source = rec.string("source");
  measured.known_gap = rec.string_or("known_gap", "");
  read_measured(rec.object("measured"), measured);
  const std::string scenario = record_scenario(dataset, rec);
  const std::vector<std::string> sets = record_sets(rec, raw);
  PointOverrides none;
  std::vector<PointOverrides> points{none};
  if (rec.has("vary")) {
    const JsonReader vary = rec.object("vary");
    const std::string path = vary.string("path");
    points.clear();
    for (const auto& v : raw.at("vary").at("values")) points.push_back({{path, v}});
  }
  const ScenarioSource source = read_scenario(scenario, sets);
  for (const auto& point : points) {
    try {
      out.push_back({compose(source, changes_of(point, dataset + ": " + measured.id)), measured});
    } catch (const InputError& e) {
      if (!e.infeasible()) throw;
    }
  }
}

std::vector<RecordRun> dataset_runs(const std::string& dataset) {
  const nlohmann::json doc = read_json_file(dataset);
  const JsonReader top(doc, dataset, "");
  if (!top.has("records") || !doc.at("records").is_array()) top.fail("records", "expected an array of records");
  std::vector<RecordRun> runs;
  const auto& records = doc.at("records");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const JsonReader rec(records[i], dataset, "records[" + std::to_string(i) + "]");
    const std::string kind = rec.string("kind");
    if (kind == "step" || kind == "step_range") record_runs(rec, records[i], dataset, runs);
  }
  return runs;
}

bool same_run(const Scenario& s, const nlohmann::json& result) {
  return result.value("flop_convention", "") == s.flop_convention && result.contains("inputs") &&
         result.at("inputs") == s.resolved;
}

// The datasets `moesim validate` reads by default, from the nearest folder above `scenario_file`
// that holds them.
std::vector<std::string> datasets_near(const std::string& scenario_file) {
  const std::vector<std::string> defaults = default_validation_datasets();
  const auto present_under = [&](const fs::path& root) {
    std::vector<std::string> found;
    for (const auto& d : defaults) {
      std::error_code ec;
      if (fs::is_regular_file(root / d, ec)) found.push_back((root / d).lexically_normal().string());
    }
    return found;
  };
  std::vector<std::string> datasets;
  std::error_code ec;
  const fs::path start = fs::absolute(fs::path(scenario_file), ec).parent_path();
  for (fs::path dir = start; !ec && !dir.empty() && datasets.empty(); dir = dir.parent_path()) {
    datasets = present_under(dir);
    if (dir == dir.parent_path()) break;
  }
  return datasets;
}

// A dataset's path as `moesim validate` names it, so the page says the same wherever it was made.
std::string shown_dataset(const std::string& path) {
  for (const auto& d : default_validation_datasets()) {
    if (path.size() >= d.size() && path.compare(path.size() - d.size(), d.size(), d) == 0) return d;
  }
  return path;
}

}  // namespace

struct PublishedMatcher::Run {
  RecordRun run;
};

PublishedMatcher::PublishedMatcher(const std::vector<std::string>& datasets) : datasets_(datasets) {
  for (const auto& dataset : datasets)
    for (auto& run : dataset_runs(dataset)) runs_.push_back({std::move(run)});
}

PublishedMatcher::PublishedMatcher(const std::string& scenario_file) : PublishedMatcher(datasets_near(scenario_file)) {
  shown_names_ = true;
}

PublishedMatcher::~PublishedMatcher() = default;

void PublishedMatcher::add(const nlohmann::json& p) {
  if (p.value("status", "") != "ok" || !p.contains("result")) return;
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    if (!same_run(runs_[i].run.scenario, p.at("result"))) continue;
    PublishedMeasurement m = runs_[i].run.measured;
    m.point = p.at("index").get<std::size_t>();
    found_.emplace_back(i, std::move(m));
  }
}

PublishedOverlay PublishedMatcher::overlay() const {
  std::vector<std::pair<std::size_t, PublishedMeasurement>> found = found_;
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  PublishedOverlay out{datasets_, {}};
  for (auto& [run, m] : found) out.measurements.push_back(std::move(m));
  if (shown_names_) {
    for (auto& d : out.datasets) d = shown_dataset(d);
    for (auto& m : out.measurements) m.dataset = shown_dataset(m.dataset);
  }
  return out;
}

PublishedOverlay published_measurements(const std::vector<std::string>& datasets, const nlohmann::json& points) {
  PublishedMatcher matcher(datasets);
  for (const auto& p : points) matcher.add(p);
  return matcher.overlay();
}

PublishedOverlay published_for_scenario(const std::string& scenario_file, const nlohmann::json& points) {
  PublishedMatcher matcher(scenario_file);
  for (const auto& p : points) matcher.add(p);
  return matcher.overlay();
}

}  // namespace moesim
