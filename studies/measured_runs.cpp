#include "studies/measured_runs.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "models/arch/flops.hpp"
#include "models/common/json_reader.hpp"
#include "models/common/suggest.hpp"
#include "models/plan/design_spec.hpp"
#include "sim/step_simulation.hpp"
#include "studies/validation.hpp"

namespace moesim {

namespace {

namespace fs = std::filesystem;

// The measured keys that carry a unit in their name (DESIGN.md house style); a key that names one
// of these measurements without its unit is refused by naming them.
const std::vector<std::string>& keys_with_units() {
  static const std::vector<std::string> keys = {"step_time_s",        "step_time_ms",      "tokens_per_s_per_gpu",
                                                "peak_allocated_GiB", "peak_reserved_GiB", "phase_exposed_ms"};
  return keys;
}

const std::string kPhasePrefix = "phase.";

std::vector<std::string> phase_names() {
  std::vector<std::string> out;
  for (std::size_t p = 0; p < kPhases; ++p) out.emplace_back(name_of(static_cast<PhaseTag>(p)));
  return out;
}

// A key that names a measurement but not its unit ("step_time", "peak_allocated_GB"): the error
// says which keys would carry one.
void refuse_unitless(const JsonReader& m, const nlohmann::json& raw) {
  for (const auto& item : raw.items()) {
    const std::string key = item.key();
    if (std::find(keys_with_units().begin(), keys_with_units().end(), key) != keys_with_units().end()) continue;
    std::vector<std::string> with_unit;
    for (const auto& k : keys_with_units()) {
      const std::string stem = k.substr(0, k.rfind('_'));
      if (k.rfind(key, 0) == 0 || key.rfind(stem, 0) == 0) with_unit.push_back(k);
    }
    if (!with_unit.empty()) {
      m.fail(key, "a measurement without its unit in the key; write " + comma_joined(with_unit) +
                      " (seconds s, milliseconds ms, GiB = 2^30 bytes, MFU as a fraction)");
    }
  }
}

std::string read_flop_convention(const JsonReader& m) {
  if (!m.has("mfu")) {
    if (m.has("flop_convention")) m.fail("flop_convention", "names the convention of an MFU, but no mfu is given");
    return "";
  }
  if (!m.has("flop_convention")) {
    m.fail("mfu", "an MFU needs its FLOP convention (flop_convention: " + flop_conventions().list() +
                      "): conventions count attention and the LM head differently");
  }
  const std::string name = m.string("flop_convention");
  try {
    (void)flop_conventions().get(name);  // the registry's own error: the name, a suggestion, the valid ones
  } catch (const UnknownNameError& e) {
    m.fail("flop_convention", e.what());
  }
  return name;
}

std::vector<RunMetric> read_metrics(const JsonReader& m, const nlohmann::json& raw) {
  refuse_unitless(m, raw);
  std::vector<RunMetric> out;
  if (m.has("step_time_s") && m.has("step_time_ms"))
    m.fail("step_time_ms", "give step_time_s or step_time_ms, not both");
  if (m.has("step_time_s")) out.push_back({"step_time_s", m.number("step_time_s", Range::positive())});
  if (m.has("step_time_ms")) out.push_back({"step_time_s", m.number("step_time_ms", Range::positive()) / 1e3});
  if (m.has("tokens_per_s_per_gpu"))
    out.push_back({"tokens_per_s_per_gpu", m.number("tokens_per_s_per_gpu", Range::positive())});
  if (m.has("mfu")) out.push_back({"mfu", m.number("mfu", Range{0.0, 1.0, true})});
  if (m.has("peak_allocated_GiB"))
    out.push_back({"peak_allocated_GiB", m.number("peak_allocated_GiB", Range::positive())});
  if (m.has("peak_reserved_GiB"))
    out.push_back({"peak_reserved_GiB", m.number("peak_reserved_GiB", Range::positive())});
  if (const auto phases = m.optional_object("phase_exposed_ms")) {
    for (const auto& phase : phase_names()) {
      if (phases->has(phase))
        out.push_back({kPhasePrefix + phase + "_s", phases->number(phase, Range::non_negative()) / 1e3});
    }
    phases->finish();
  }
  if (out.empty()) {
    throw InputError(m.file(), m.path(),
                     "no measurement: give at least one of step_time_s, step_time_ms, tokens_per_s_per_gpu, mfu, "
                     "peak_allocated_GiB, peak_reserved_GiB, phase_exposed_ms");
  }
  return out;
}

MeasuredRun read_run(const JsonReader& r, const nlohmann::json& raw, const std::string& file,
                     const std::vector<std::string>& extra_sets) {
  MeasuredRun run;
  run.path = r.path();
  run.id = r.string("id");
  if (run.id.empty()) r.fail("id", "must name the run");
  run.source = r.string("source");
  if (run.source.empty()) r.fail("source", "must say where the measurements come from (a log, a figure)");
  const JsonReader m = r.object("measured");
  run.metrics = read_metrics(m, raw.at("measured"));
  run.flop_convention = read_flop_convention(m);
  m.finish();
  std::vector<std::string> sets = record_sets(r, raw);
  if (!run.flop_convention.empty()) sets.push_back(override_text("flop_convention", run.flop_convention));
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  if (!r.has("scenario")) r.fail("scenario", "required field is missing (a scenario file or an inline scenario)");
  const nlohmann::json& scenario = raw.at("scenario");
  try {
    if (scenario.is_string()) {
      const std::string path = (fs::path(file).parent_path() / scenario.get<std::string>()).lexically_normal();
      run.scenario = read_scenario(path, sets);
    } else if (scenario.is_object()) {
      run.scenario = read_scenario_document(scenario, file, sets);
    } else {
      r.fail("scenario", "expected a scenario file name or an inline scenario object");
    }
    const Scenario composed = compose(run.scenario);
    run.design = design_name(composed.plan);
    run.gpus = composed.plan.world();
    run.experts = composed.arch.moe ? composed.arch.moe->num_experts : 0;
    run.microbatches = batch_shape(composed.plan, composed.arch).microbatches;
  } catch (const InputError& e) {
    if (e.file() == file && e.path().rfind(r.path(), 0) == 0) throw;
    throw InputError(file, r.child_path("scenario"), "the run's scenario is invalid: " + std::string(e.what()));
  }
  r.finish();
  return run;
}

}  // namespace

RunsFile parse_runs(const nlohmann::json& doc, const std::string& file, const std::vector<std::string>& extra_sets) {
  const JsonReader top(doc, file, "");
  RunsFile out;
  out.file = file;
  if (top.string("schema") != "moesim-runs/1") top.fail("schema", "expected \"moesim-runs/1\"");
  out.name = top.string_or("name", fs::path(file).stem().string());
  top.string_or("description", "");
  std::set<std::string> ids;
  const auto runs = top.object_list("runs");
  if (runs.empty()) top.fail("runs", "no runs: a fit needs measured runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out.runs.push_back(read_run(runs[i], doc.at("runs")[i], file, extra_sets));
    if (!ids.insert(out.runs.back().id).second)
      runs[i].fail("id", "\"" + out.runs.back().id + "\" names an earlier run too; ids must be unique");
  }
  top.finish();
  return out;
}

RunsFile read_runs(const std::string& file, const std::vector<std::string>& extra_sets) {
  return parse_runs(read_json_file(file), file, extra_sets);
}

std::vector<double> predict_run(const MeasuredRun& run, const std::vector<ScenarioChange>& changes) {
  const StepResult r = simulate(compose(run.scenario, changes)).result;
  std::vector<double> out;
  for (const auto& metric : run.metrics) {
    if (metric.name == "step_time_s") out.push_back(r.step_time_s);
    if (metric.name == "tokens_per_s_per_gpu") out.push_back(r.tokens_per_s_per_gpu);
    if (metric.name == "mfu") out.push_back(r.mfu);
    if (metric.name == "peak_allocated_GiB")
      out.push_back(largest_stage_peak_GiB(r.ledger, &StageLedger::peak_allocated));
    if (metric.name == "peak_reserved_GiB")
      out.push_back(largest_stage_peak_GiB(r.ledger, &StageLedger::peak_reserved));
    for (std::size_t p = 0; p < kPhases; ++p) {
      if (metric.name == kPhasePrefix + name_of(static_cast<PhaseTag>(p)) + "_s") out.push_back(r.exposed_s[p]);
    }
  }
  return out;
}

}  // namespace moesim
