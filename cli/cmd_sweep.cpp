// `moesim sweep SCENARIO [--vary PATH=V1,V2,...]... [--json F] [--csv F] [--html F] [-j N]` and
// `moesim compare SCENARIO --design fsdp --design ddp+ep8 ...`.
#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/mpi_world.hpp"
#include "cli/option_checks.hpp"
#include "cli/progress.hpp"
#include "models/input/scenario.hpp"
#include "reports/html_report.hpp"
#include "reports/output_file.hpp"
#include "reports/stack_report.hpp"
#include "reports/sweep_report.hpp"
#include "reports/sweep_stream.hpp"
#include "reports/sweep_table.hpp"
#include "reports/trace_writer.hpp"
#include "studies/compare.hpp"
#include "studies/compare_stacks.hpp"
#include "studies/published.hpp"

namespace moesim::cli {

namespace {
struct OutputArgs {
  std::string json_out, csv_out, html_out;
  bool fail_on_oom = false;
};

std::ostream& listing_for(const OutputArgs& o, const std::string& trace_out = "") {
  return listing_stream(
      {{"--json", &o.json_out}, {"--csv", &o.csv_out}, {"--html", &o.html_out}, {"--trace", &trace_out}});
}

void add_outputs(CLI::App* sub, OutputArgs& o) {
  sub->add_option("--json", o.json_out, "write the JSON document to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--csv", o.csv_out, "write one CSV row per point to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--html", o.html_out, "write a self-contained HTML page with plots to FILE ('-' for standard output)")
      ->check(output_path());
  add_fail_on_oom(sub, o.fail_on_oom);
}

int default_jobs() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

Runner add_sweep_command(CLI::App& app) {
  struct Args {
    std::string scenario, trace_out;
    std::vector<std::string> sets, vary;
    int jobs = default_jobs();
    int trace_point = -1;
    std::string detail = "summary";
    OutputArgs out;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("sweep", "simulate the Cartesian product of the scenario's (and --vary) axes");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--set", args->sets, "override a scenario field for every point: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("--vary", args->vary,
                  "an axis: PATH=V1,V2,... or PATH=A..B (doubling) or A..B+S; sizes like 128Ki, 4Mi (repeatable)");
  sub->add_option("-j,--jobs", args->jobs, "threads (default: all cores)")->check(CLI::Range(1, 4096));
  // Each needs the other: alone, either would be silently ignored.
  auto* trace_point = sub->add_option("--trace-point", args->trace_point,
                                      "index of the point to write a Perfetto trace for (with --trace)")
                          ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  sub->add_option("--trace", args->trace_out, "trace file for --trace-point")->check(output_path())->needs(trace_point);
  trace_point->needs("--trace");
  add_outputs(sub, args->out);
  sub->add_option("--detail", args->detail,
                  "what --json and --html keep of each point: summary (default: the step document without its "
                  "resolved inputs, which the document holds once) or full (each point's resolved inputs too)");
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    const PointDetail asked = parse_point_detail(args->detail);
    std::ostream& listing = listing_for(args->out, args->trace_out);
    const ScenarioSource source = read_scenario(args->scenario, args->sets);
    const Scenario base = compose(source);
    SweepSpec spec = source.sweep;
    std::set<std::string> varied;  // paths a --vary set: a later --vary of one replaces it, not the file's axis
    for (const auto& v : args->vary) {
      SweepAxis axis = parse_axis(v);
      const std::string path = axis.path;
      if (set_axis(spec, std::move(axis))) {
        std::cerr << "moesim: --vary " << path << " replaces "
                  << (varied.count(path) ? "an earlier --vary" : "the scenario's sweep axis") << " of the same path\n";
      }
      varied.insert(path);
    }
    const auto points = expand_points(source, spec);
    if (args->trace_point >= static_cast<int>(points.size())) {
      throw InputError("--trace-point", std::to_string(args->trace_point),
                       "no such point; the sweep has " + std::to_string(points.size()));
    }
    // The page holds every point: measured, a 2,000-point Figure 8 expert sweep made a page of
    // 7,186,288 bytes, 3,593 a point; a 20,000-point one (`--vary plan.optimizer.min_shard_numel=
    // 1..5000+1 --vary design=ddp,fsdp,ddp+ep8,zero2`) a 64 MB page that headless Chromium took
    // 53 s and 1.0 GB to render. Past kMaxPagePoints (about 170 MiB, minutes and gigabytes in a
    // browser) the page is refused before any point runs.
    constexpr std::size_t kPageBytesPerPoint = 3593, kMaxPagePoints = 50000;
    if (!args->out.html_out.empty() && points.size() > kMaxPagePoints) {
      throw InputError("--html", args->out.html_out,
                       "a page of " + std::to_string(points.size()) + " points (about " +
                           std::to_string((points.size() * kPageBytesPerPoint) >> 20) +
                           " MiB) would take minutes and gigabytes to open in a browser; allowed: up to " +
                           std::to_string(kMaxPagePoints) +
                           " points on a page: narrow the sweep, or write --json (--detail summary) or --csv and plot "
                           "from them");
    }
    // Under MPI each rank takes a contiguous slice; rank 0 writes the one report.
    const MpiWorld world;
    const std::size_t n = points.size(), size = static_cast<std::size_t>(world.size()),
                      rank = static_cast<std::size_t>(world.rank());
    const std::size_t first = rank * (n / size) + std::min(rank, n % size);
    const std::size_t count = n / size + (rank < n % size ? 1 : 0);
    Progress progress(world.size() > 1 ? "sweep (rank " + std::to_string(rank) + ")" : "sweep", count);
    const auto on_progress = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
    // Every point passes through here once, in point order, and is dropped unless the HTML page
    // (which plots them all) needs it: the listing, JSON and CSV take it as it comes.
    SweepListing table(sweep_axes_json(spec));
    table.scan(points);
    // Summary points leave their resolved inputs out: the document holds the base scenario's once.
    const nlohmann::json inputs = asked == PointDetail::summary ? base.resolved : nlohmann::json();
    SweepStream stream(base.name, spec, args->out.json_out, args->out.csv_out, inputs);
    nlohmann::json kept = nlohmann::json::array();
    // The page matches published runs by each point's resolved inputs: read while the point has
    // them, then dropped from a summary point.
    const bool html = !args->out.html_out.empty();
    std::optional<PublishedMatcher> published;
    if (html) published.emplace(args->scenario);
    const auto consume = [&](nlohmann::json p) {
      if (published) published->add(p);
      if (asked == PointDetail::summary && p.contains("result")) p["result"].erase("inputs");
      table.add(p);
      stream.add(p);
      if (html) kept.push_back(std::move(p));
    };
    // The listing and the CSV read only the headline fields of each point.
    const PointDetail detail = html ? PointDetail::full : args->out.json_out.empty() ? PointDetail::headline : asked;
    SweepTally tally;
    if (world.size() == 1) {
      run_points_in_order(
          source, points, first, count, args->jobs, on_progress,
          [&](SweepPoint&& p) {
            tally.add(p);
            consume(sweep_point_json(std::move(p), detail));
          },
          detail == PointDetail::full ? ResolvedRecord::all_sections : ResolvedRecord::without_unchanged_hardware);
      progress.finish();
    } else {
      SweepResult result = run_points(source, points, first, count, args->jobs, on_progress);
      progress.finish();
      nlohmann::json mine = {{"tally", tally_json(tally_of(result.points))}, {"points", nlohmann::json::array()}};
      for (auto& p : result.points) mine["points"].push_back(sweep_point_json(std::move(p), detail));
      const auto parts = world.gather(mine.dump());
      if (world.rank() != 0) return 0;
      for (const auto& part : parts) {  // in rank order: the ranks' slices follow each other
        nlohmann::json theirs = nlohmann::json::parse(part);
        tally.merge(tally_from_json(theirs.at("tally")));
        for (auto& p : theirs.at("points")) consume(std::move(p));
      }
    }
    listing << table.render(tally);
    require_a_valid_point(tally.fit + tally.oom > 0, n, "point of the sweep", args->scenario);
    stream.finish();
    if (!args->out.html_out.empty()) {
      const nlohmann::json doc = sweep_document(base.name, spec, std::move(kept), inputs);
      write_output(args->out.html_out, html_report(doc, published->overlay()));
    }
    if (args->trace_point >= 0 && !args->trace_out.empty()) {
      const Scenario s = compose(source, changes_of(points[static_cast<std::size_t>(args->trace_point)]));
      write_output(args->trace_out, trace_json(simulate(s)));
    }
    return exit_code(args->out.fail_on_oom, tally.oom > 0);
  };
}

namespace {
// A choice named twice is compared once (the issue-13 rule: no point simulated twice), with a
// warning naming it.
std::vector<std::string> once_each(const std::vector<std::string>& named, const char* what) {
  std::vector<std::string> out;
  for (const auto& n : named) {
    if (std::find(out.begin(), out.end(), n) == out.end()) {
      out.push_back(n);
    } else {
      std::cerr << "moesim: " << what << " " << n << " is named more than once; it is compared once\n";
    }
  }
  return out;
}

// `compare --stack`: one point per stack (a stack named twice is compared once); the listing,
// what each stack set and its phases against the first stack's; --json and --csv write the
// points as a sweep over plan.stack.
int compare_under_stacks(const ScenarioSource& source, const Scenario& base, const std::vector<std::string>& named,
                         int jobs, const OutputArgs& out, const std::string& scenario_file) {
  const std::vector<std::string> stacks = once_each(named, "stack");
  const StackComparison result = compare_stacks(source, base.plan.design, stacks, jobs);
  SweepSpec spec;
  spec.axes.push_back({"plan.stack", {}});
  for (const auto& s : stacks) spec.axes.back().values.push_back(s);
  const nlohmann::json sweep_doc = sweep_json(base.name, spec, result.points);
  const SweepTally tally = tally_of(result.points.points);
  listing_for(out) << listing_of(sweep_doc).render(tally) << stack_comparison_text(result);
  require_a_valid_point(tally.fit + tally.oom > 0, sweep_doc.at("points").size(), "stack of the comparison",
                        scenario_file);
  if (!out.json_out.empty()) write_output(out.json_out, json_text(sweep_doc));
  if (!out.csv_out.empty()) write_output(out.csv_out, sweep_csv(sweep_doc));
  if (!out.html_out.empty()) write_output(out.html_out, html_report(sweep_doc));
  return exit_code(out.fail_on_oom, tally.oom > 0);
}
}  // namespace

Runner add_compare_command(CLI::App& app) {
  struct Args {
    std::string scenario;
    std::vector<std::string> sets, designs, stacks, vary;
    int jobs = default_jobs();
    OutputArgs out;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "compare",
      "designs side by side, with batch crossovers and expert-count memory walls; or one plan under several stacks");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--design", args->designs,
                  "fsdp, ddp, ddp+ep8, ddp+ep8+pp4, fsdp+hsdp8, ddp+nodistopt ... (repeatable; default: the scenario's "
                  "compare.designs)");
  sub->add_option("--stack", args->stacks,
                  "olmo-core, megatron-core, torchtitan, composer (repeatable, instead of --design): the plan under "
                  "each training stack, every value the stack sets replacing the plan's own (moesim list stacks)")
      ->excludes("--design");
  sub->add_option("--set", args->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("--vary", args->vary,
                  "set the designs side by side over an axis as sweep --vary does, beside the scenario's sweep axes "
                  "(repeatable)")
      ->excludes("--stack");
  sub->add_option("-j,--jobs", args->jobs, "threads (default: all cores)")->check(CLI::Range(1, 4096));
  add_outputs(sub, args->out);
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing = listing_for(args->out);
    const ScenarioSource source = read_scenario(args->scenario, args->sets);
    const Scenario base = compose(source);
    if (!args->stacks.empty())
      return compare_under_stacks(source, base, args->stacks, args->jobs, args->out, args->scenario);
    // The designs side by side over the scenario's sweep axes and any --vary (a design axis there
    // names the designs when neither --design nor compare.designs does).
    SweepSpec axes = source.sweep;
    for (const auto& v : args->vary) set_axis(axes, parse_axis(v));
    std::vector<std::string> named = args->designs.empty() ? source.compare.designs : args->designs;
    for (const auto& a : axes.axes)
      if (named.empty() && a.path == "design")
        for (const auto& d : a.values) named.push_back(d.is_string() ? d.get<std::string>() : d.dump());
    const std::vector<std::string> designs = once_each(named, "design");
    if (designs.empty())
      throw InputError("--design", "",
                       "no designs: give --design at least once or a compare.designs list in the scenario");
    const CompareResult result = compare_designs(source, designs, args->jobs, axes);
    const nlohmann::json sweep_doc = sweep_json(base.name, result.spec, result.points);
    const SweepTally tally = tally_of(result.points.points);
    listing << listing_of(sweep_doc).render(tally) << compare_findings(result);
    require_a_valid_point(tally.fit + tally.oom > 0, sweep_doc.at("points").size(), "design of the comparison",
                          args->scenario);
    const nlohmann::json doc = compare_json(base.name, result, sweep_doc.at("points"));
    if (!args->out.json_out.empty()) write_output(args->out.json_out, json_text(doc));
    if (!args->out.csv_out.empty()) write_output(args->out.csv_out, sweep_csv(sweep_doc));
    if (!args->out.html_out.empty()) {
      const auto published = published_for_scenario(args->scenario, sweep_doc.at("points"));
      write_output(args->out.html_out, html_report(sweep_doc, published, doc));
    }
    return exit_code(args->out.fail_on_oom, tally.oom > 0);
  };
}

}  // namespace moesim::cli
