// `moesim plan SCENARIO --gpus N [--gpus-per-node G] [--global-batch TOKENS] [--top K]
// [--objective tokens_per_s|mfu|memory_headroom] [--min-headroom GIB] [--max-candidates N]
// [--search AXIS=V1,V2,...]... [--json F] [--csv F] [--html F] [-j J]`: the fastest plan that
// fits, found by search (studies/plan_search), with its progress on stderr.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/listing.hpp"
#include "cli/mpi_world.hpp"
#include "cli/option_checks.hpp"
#include "models/input/overrides.hpp"
#include "models/input/scenario.hpp"
#include "reports/output_file.hpp"
#include "reports/plan_html.hpp"
#include "reports/plan_report.hpp"
#include "reports/step_report.hpp"
#include "reports/sweep_report.hpp"
#include "studies/plan_search.hpp"

namespace moesim::cli {

namespace {

std::int64_t tokens_of(const std::string& text) {
  const auto v = size_value(text);
  if (!v || *v < 1 || *v != std::floor(*v) || *v > 9.0e15)
    throw InputError("--global-batch", text, "allowed: a whole number of tokens >= 1 (sizes like 4Mi, 16Mi)");
  return static_cast<std::int64_t>(*v);
}

// The search's progress on stderr: a line rewritten in place on a terminal, else one line as each
// stage ends (screening, replaying), so that logs stay short.
class PlanProgressLine {
 public:
  PlanProgressLine() : tty_(::isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}
  ~PlanProgressLine() { end_stage(); }
  PlanProgressLine(const PlanProgressLine&) = delete;
  PlanProgressLine& operator=(const PlanProgressLine&) = delete;

  void update(std::string_view stage, std::size_t done, std::size_t total) {
    if (stage != stage_) {
      end_stage();
      stage_ = std::string(stage);
      stage_start_ = std::chrono::steady_clock::now();
    }
    done_ = done;
    total_ = total;
    if (tty_) std::fprintf(stderr, "\rplan: %s %zu/%zu, %.1f s ", stage_.c_str(), done, total, seconds(start_));
  }

 private:
  static double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  }
  void end_stage() {
    if (stage_.empty()) return;
    if (tty_) std::fprintf(stderr, "\n");
    const bool replay = stage_ == "replaying";
    std::fprintf(stderr, "plan: %s %zu %s in %.2f s%s\n", replay ? "replayed" : "screened", done_,
                 replay ? "plans" : "candidates", seconds(stage_start_),
                 replay && done_ < total_
                     ? (" (of " + std::to_string(total_) + " that fit; the step-time bound pruned the rest)").c_str()
                     : "");
    stage_.clear();
  }

  bool tty_;
  std::chrono::steady_clock::time_point start_, stage_start_;
  std::string stage_;
  std::size_t done_ = 0, total_ = 0;
};

}  // namespace

Runner add_plan_command(CLI::App& app) {
  struct Args {
    std::string scenario, global_batch, objective = "tokens_per_s", json_out, csv_out, html_out;
    std::vector<std::string> sets;
    PlanRequest request;
    std::size_t top = 5;
    double min_headroom_GiB = 0;
    int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("plan", "search parallel plans for the fastest one that fits, and say why it wins");
  sub->add_option("scenario", args->scenario, "scenario JSON file: the model, the hardware and the fixed choices")
      ->required();
  sub->add_option("--gpus", args->request.gpus, "GPUs to plan for")->required()->check(CLI::Range(1, 1000000));
  sub->add_option("--gpus-per-node", args->request.gpus_per_node, "GPUs per node (default: the scenario's)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--global-batch", args->global_batch, "global batch in tokens, e.g. 4Mi (default: the scenario's)");
  sub->add_option("--top", args->top, "plans to rank (default 5)")->check(CLI::Range(1, 1000));
  sub->add_option("--objective", args->objective, "tokens_per_s (default), mfu or memory_headroom");
  sub->add_option("--min-headroom", args->min_headroom_GiB,
                  "GiB a plan must leave free on its fullest GPU to count as fitting (default 0)")
      ->check(CLI::Range(0.0, 1024.0));
  sub->add_option("--max-candidates", args->request.max_candidates,
                  "refuse a search space of more candidate plans than this (default " +
                      std::to_string(kDefaultMaxPlanCandidates) + ")")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000000}));
  sub->add_option(
      "--search", args->request.search,
      "restrict an axis (design=fsdp,hsdp,ddp,ddp-nodistopt,...; hsdp, tp, cp, ep, etp, pp, microbatch=INTS; "
      "schedule=1f1b,v2,v4 (also vN, 1f1b_v, zb_h1, zbv); split=even,balanced; recompute=none,selective,full; "
      "layout=per_tensor,concat_then_shard,same_param_count; precision=scenario,bf16,fp8,mxfp8) or add a scenario "
      "path axis PATH=V1,V2 (repeatable)");
  sub->add_option("--set", args->sets, "override a scenario field: PATH=VALUE (repeatable)");
  add_profile_option(sub, args->sets);
  sub->add_option("-j,--jobs", args->jobs, "threads (default: all cores)")->check(CLI::Range(1, 4096));
  sub->add_option("--json", args->json_out, "write the plan document to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--csv", args->csv_out, "write one CSV row per screened plan to FILE ('-' for standard output)")
      ->check(output_path());
  sub->add_option("--html", args->html_out,
                  "write a self-contained HTML page (throughput-vs-memory frontier, top K) to FILE ('-' for standard "
                  "output)")
      ->check(output_path());
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    std::ostream& listing =
        listing_stream({{"--json", &args->json_out}, {"--csv", &args->csv_out}, {"--html", &args->html_out}});
    PlanSearchOptions options;
    options.objective = parse_objective(args->objective);
    options.top_k = args->top;
    options.jobs = args->jobs;
    options.min_headroom_GiB = args->min_headroom_GiB;
    if (!args->global_batch.empty()) args->request.global_batch_tokens = tokens_of(args->global_batch);
    const ScenarioSource source = plan_source(read_scenario(args->scenario, args->sets), args->request);
    const Scenario base = compose(source);
    const PlanSpace space = plan_space(source, base, args->request);
    // Under MPI every rank screens and replays a slice of each batch; rank 0 writes the reports.
    const MpiWorld world;
    options.share = {world.rank(), world.size(), [&world](const std::string& mine) { return world.all_gather(mine); }};
    std::optional<PlanProgressLine> progress;
    if (world.rank() == 0) {
      progress.emplace();
      options.progress = [&progress](std::string_view stage, std::size_t done, std::size_t total) {
        progress->update(stage, done, total);
      };
    }
    const PlanSearchResult result = search_plans(source, space, options);
    progress.reset();  // its last line before the listing
    if (world.rank() != 0) return kExitOk;
    if (world.size() > 1) std::cerr << "moesim: plan search split over " << world.size() << " MPI ranks\n";
    const nlohmann::json doc = plan_json(base.name, result);
    listing << plan_listing(doc) << kernel_basis_line(base);
    // Every candidate refused by a rule (a --search no plan of this GPU count can meet) is bad
    // input, as an all-invalid sweep is: no report.
    require_a_valid_point(!result.records.empty(), result.counts.enumerated, "candidate plan", args->scenario);
    if (!args->json_out.empty()) write_output(args->json_out, json_text(doc));
    if (!args->csv_out.empty()) write_output(args->csv_out, plan_csv(doc));
    if (!args->html_out.empty()) write_output(args->html_out, plan_html_report(doc));
    // No fitting plan is an answer, not a failure of the input: the listing says so; exit 3 as
    // --fail-on-oom does elsewhere, so scripts can tell.
    return result.top.empty() ? kExitOutOfMemory : kExitOk;
  };
}

}  // namespace moesim::cli
