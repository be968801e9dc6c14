// The plan search: screen every candidate, replay the ones that can still win, rank them.
#include "studies/plan_search.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

#include "models/common/units.hpp"
#include "models/plan/design_spec.hpp"
#include "studies/plan_frontier.hpp"
#include "studies/plan_outcomes.hpp"
#include "studies/plan_structures.hpp"
#include "studies/plan_twins.hpp"

namespace moesim {

namespace {

// Plans replayed per round: the rounds, not the threads, decide which plans are replayed, so
// the answer is the same at any -j; 16 keeps two to sixteen threads busy with little overshoot.
constexpr std::size_t kReplaysPerRound = 16;

class Search {
 public:
  Search(const ScenarioSource& source, const PlanSpace& space, const PlanSearchOptions& options)
      : source_(source), base_(compose(source)), lean_(base_), base_inventory_(build_inventory(base_.arch)) {
    // Screening reads the composed model and plan; the profile's document is not kept.
    lean_.resolved.erase("hardware");
    out_.space = space;
    out_.options = options;
  }

  PlanSearchResult run() {
    out_.candidates = enumerate_plans(out_.space, base_);
    out_.counts.enumerated = out_.candidates.size();
    screen();
    replay_rounds();
    rank();
    return std::move(out_);
  }

 private:
  // The screen of a group's first composed twin: its scenario and what the others share with it.
  struct Twin {
    std::optional<Scenario> scenario;
    PlanScreen screen;  // its bound and FLOPs (the ledger is each twin's own)
  };

  // Composes and screens candidate `c`; a same-step twin of `twin` takes its bound.
  Screened screen_one(const PlanCandidate& c, Twin& twin) {
    Screened out;
    try {
      Scenario s = compose_candidate(source_, lean_, c, ResolvedRecord::without_unchanged_hardware);
      const PlanCandidate* composed = &c;
      PlanCandidate split;
      if (c.balanced_split) {
        // The split follows from the composed plan's costs; one equal to the even split is the
        // even candidate again.
        out.split = balanced_split(s);
        if (out.split == virtual_stage_layer_counts(s.plan, s.arch)) {
          out.rejected = "the balanced layer split is the even split";
          return out;
        }
        split = c;
        set_layer_split(split, out.split);
        composed = &split;
        s = compose_candidate(source_, lean_, split, ResolvedRecord::without_unchanged_hardware);
      }
      std::optional<Inventory> own;
      if (s.resolved.at("architecture") != base_.resolved.at("architecture")) own = build_inventory(s.arch);
      const Inventory& inventory = own ? *own : base_inventory_;
      const std::shared_ptr<const LedgerStructure> structure = structures_.of(*composed, s, own ? &*own : nullptr);
      if (twin.scenario && same_step(*twin.scenario, s)) {
        twin.screen.ledger = scenario_ledger(s, *structure);
        out.record = screened(c, s, twin.screen);
      } else {
        twin.screen = screen_plan(s, inventory, *structure);
        out.record = screened(c, s, twin.screen);
        twin.scenario = std::move(s);
      }
    } catch (const InputError& e) {
      out.rejected = "the plan is refused at " + (e.path().empty() ? std::string("its input") : e.path());
    }
    return out;
  }

  // Composes and screens every candidate the rules let through (in parallel, by group of twins).
  void screen() {
    std::vector<std::size_t> passed;
    for (const auto& c : out_.candidates) {
      if (c.refusal.empty())
        passed.push_back(c.index);
      else
        ++out_.refusals[c.refusal];
    }
    const std::vector<std::vector<std::size_t>> groups = twin_groups(out_.candidates, passed);
    const auto compute = [&](std::size_t g) {
      std::vector<Screened> out;
      Twin twin;
      for (const std::size_t at : groups[g]) {
        out.push_back(screen_one(out_.candidates[passed[at]], twin));
        tick("screening", passed.size());
      }
      return out;
    };
    std::vector<Screened> slots = shared_group_map<Screened>(
        groups, passed.size(), out_.options.jobs, out_.options.share, compute, screened_json, screened_from_json);
    for (auto& slot : slots) {
      if (!slot.record) {
        ++out_.refusals[slot.rejected];
        continue;
      }
      if (!slot.split.empty()) {
        PlanCandidate& c = out_.candidates[slot.record->candidate];
        set_layer_split(c, slot.split);
        c.values["layer_split"] = slot.split;
      }
      out_.records.push_back(std::move(*slot.record));
    }
    out_.counts.refused_by_rule = out_.counts.enumerated - out_.records.size();
  }

  PlanRecord screened(const PlanCandidate& c, const Scenario& s, const PlanScreen& screen) const {
    PlanRecord r;
    r.candidate = c.index;
    r.design = design_name(s.plan);
    const StageLedger& worst = screen.ledger.stages[screen.ledger.worst_stage];
    r.peak_reserved_GiB = worst.peak_reserved / kGiB;
    r.device_total_GiB = worst.device_total / kGiB;
    r.headroom_GiB = worst.headroom / kGiB;
    r.fits = fits(screen.ledger.oom, r.headroom_GiB);
    r.status = r.fits ? PlanStatus::pruned_by_bound : PlanStatus::pruned_by_memory;
    r.capacity_GiB = worst.capacity / kGiB;
    r.bound_step_s = screen.bound.step_s;
    const double tokens_per_gpu = dbl(s.plan.global_batch_tokens) / dbl(s.plan.world());
    switch (out_.options.objective) {
      case PlanObjective::tokens_per_s: r.score_scale = tokens_per_gpu; break;
      // The MFU of a one-second step with no token dropped: over the bound, at least the replay's.
      case PlanObjective::mfu:
        r.score_scale = model_flops_utilization(screen.flops, 0, tokens_per_gpu, s.hardware.gpu.peak_bf16_TFLOPs.value);
        break;
      case PlanObjective::memory_headroom: break;
    }
    r.score_bound = r.score_scale > 0 ? r.score_scale / r.bound_step_s : r.headroom_GiB;
    r.bound_tokens_per_s_per_gpu = tokens_per_gpu / r.bound_step_s;
    return r;
  }

  // Fits in memory, with the headroom the user asked to keep (--min-headroom).
  bool fits(bool oom, double headroom_GiB) const {
    const double keep = out_.options.min_headroom_GiB;
    return !oom && (keep <= 0 || headroom_GiB >= keep);
  }

  // One more piece of `stage` done, told to the progress callback (under a lock: screening runs
  // on several threads).
  void tick(std::string_view stage, std::size_t total) {
    if (!out_.options.progress) return;
    const std::lock_guard<std::mutex> lock(progress_mutex_);
    if (stage != progress_stage_) {
      progress_stage_ = stage;
      progress_done_ = 0;
    }
    out_.options.progress(stage, ++progress_done_, total);
  }

  std::string family_of(const PlanRecord& r) const { return out_.candidates[r.candidate].family; }
  bool uses_tp(const PlanRecord& r) const {
    const nlohmann::json& v = out_.candidates[r.candidate].values;
    return v.contains("tp") && v.at("tp").get<std::int64_t>() > 1;
  }

  std::vector<double> ranked_scores() const {
    std::vector<double> scores;
    for (const std::size_t i : ranked_) scores.push_back(out_.records[i].score);
    return scores;
  }
  std::size_t places() const { return ranked_.empty() ? 0 : shared_places(ranked_scores()).back(); }

  // Whether `r` could still enter the top K places or beat its family's best replayed plan.
  bool could_win(const PlanRecord& r) const {
    if (places() < out_.options.top_k || r.score_bound >= out_.records[ranked_.back()].score) return true;
    const auto best = family_best_.find(family_of(r));
    if (best == family_best_.end() || r.score_bound >= out_.records[best->second].score) return true;
    // The best plan without TP, to say what TP buys.
    return !uses_tp(r) && (!no_tp_best_ || r.score_bound >= out_.records[*no_tp_best_].score);
  }

  void replay_rounds() {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < out_.records.size(); ++i) {
      if (out_.records[i].fits)
        order.push_back(i);
      else
        ++out_.counts.pruned_by_memory;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return out_.records[a].score_bound > out_.records[b].score_bound;
    });
    std::size_t at = 0;
    while (at < order.size()) {
      std::vector<std::size_t> round;
      for (; at < order.size() && round.size() < kReplaysPerRound; ++at) {
        if (could_win(out_.records[order[at]])) round.push_back(order[at]);
      }
      if (round.empty()) break;
      std::vector<std::size_t> candidates;
      for (const std::size_t i : round) candidates.push_back(out_.records[i].candidate);
      const std::vector<std::vector<std::size_t>> groups = twin_groups(out_.candidates, candidates);
      // A group's first plan is simulated; its same-step twins take its step with their ledgers.
      const auto compute = [&](std::size_t g) {
        std::vector<Replayed> out;
        SweepPoint first;
        for (const std::size_t at : groups[g]) {
          const std::size_t c = candidates[at];
          SweepPoint point = replay(c, first);
          if (!first.ok) first = point;
          out.push_back(replayed(std::move(point)));
        }
        return out;
      };
      std::vector<Replayed> results = shared_group_map<Replayed>(
          groups, round.size(), out_.options.jobs, out_.options.share, compute, replayed_json, replayed_from_json);
      for (std::size_t i = 0; i < round.size(); ++i) {
        take(round[i], std::move(results[i]));
        tick("replaying", order.size());
      }
    }
    out_.counts.replayed = replayed_;
    out_.counts.pruned_by_bound = order.size() - replayed_;
  }

  void take(std::size_t record, Replayed&& x) {
    PlanRecord& r = out_.records[record];
    r.status = PlanStatus::replayed;
    ++replayed_;
    if (!x.ok) return;  // screening composed it, so this does not happen; keep it unranked
    r.step_time_s = x.step_time_s;
    r.tokens_per_s_per_gpu = x.tokens_per_s_per_gpu;
    r.mfu = x.mfu;
    r.largest_exposed_phase = x.largest_exposed_phase;
    r.largest_non_compute_phase = x.non_compute.phase;
    r.largest_non_compute_s = x.non_compute.s;
    // The replay's in-flight counts (the tests hold them equal to the schedule's).
    r.fits = fits(!x.fits, x.headroom_GiB);
    r.headroom_GiB = x.headroom_GiB;
    switch (out_.options.objective) {
      case PlanObjective::tokens_per_s: r.score = r.tokens_per_s_per_gpu; break;
      case PlanObjective::mfu: r.score = r.mfu; break;
      case PlanObjective::memory_headroom: r.score = r.headroom_GiB; break;
    }
    if (!r.fits) return;
    const auto better = [&](std::size_t a, std::size_t b) {
      const PlanRecord &first = out_.records[a], &second = out_.records[b];
      return first.score != second.score ? first.score > second.score : first.candidate < second.candidate;
    };
    ranked_.insert(std::upper_bound(ranked_.begin(), ranked_.end(), record, better), record);
    const auto [best, fresh] = family_best_.try_emplace(family_of(r), record);
    if (!fresh && better(record, best->second)) best->second = record;
    if (!uses_tp(r) && (!no_tp_best_ || better(record, *no_tp_best_))) no_tp_best_ = record;
    if (x.point) points_.emplace(record, std::move(*x.point));
    // The first K places, ties included.
    const std::vector<std::size_t> place = shared_places(ranked_scores());
    ranked_.resize(
        static_cast<std::size_t>(std::upper_bound(place.begin(), place.end(), out_.options.top_k) - place.begin()));
    // Keep the full points of the current top K and of the plans rank() compares them with (each
    // family's best, the best without TP) only.
    const auto kept = [&](std::size_t i) {
      if (std::find(ranked_.begin(), ranked_.end(), i) != ranked_.end() || no_tp_best_ == i) return true;
      return std::any_of(family_best_.begin(), family_best_.end(), [&](const auto& f) { return f.second == i; });
    };
    for (auto it = points_.begin(); it != points_.end();) it = kept(it->first) ? std::next(it) : points_.erase(it);
  }

  // The replayed point of record `i`: kept, or replayed again (under MPI another process may have
  // replayed it; replaying again gives the same point).
  SweepPoint point_of(std::size_t i) {
    const auto kept = points_.find(i);
    const std::size_t candidate = out_.records[i].candidate;
    return kept != points_.end() ? kept->second : replay(candidate, SweepPoint{});
  }

  // Candidate `c` composed with its whole resolved document and replayed (or restated from
  // `twin`: sweep.hpp run_composed_point).
  SweepPoint replay(std::size_t c, const SweepPoint& twin) const {
    const PlanCandidate& candidate = out_.candidates[c];
    return run_composed_point(
        [&](const PointOverrides&) {
          return compose_candidate(source_, base_, candidate, ResolvedRecord::all_sections);
        },
        candidate_changes(candidate), c, twin);
  }

  void rank() {
    out_.top = ranked_;
    const std::vector<std::size_t> place = shared_places(ranked_scores());
    for (std::size_t k = 0; k < ranked_.size(); ++k) {
      out_.records[ranked_[k]].rank = place[k];
      if (!out_.runner_up && place[k] == 2) out_.runner_up = k;
      out_.top_points.push_back(point_of(ranked_[k]));
    }
    const double best_tps = ranked_.empty() ? 0 : out_.records[ranked_.front()].tokens_per_s_per_gpu;
    for (const auto& family : out_.space.axes.front().values) {
      PlanFamilyBest f{family.get<std::string>(), std::nullopt, 0, {}};
      const auto best = family_best_.find(f.family);
      if (best != family_best_.end()) {
        f.record = best->second;
        f.relative_to_best = best_tps > 0 ? out_.records[best->second].tokens_per_s_per_gpu / best_tps : 0.0;
        // Where the best plan wins against this family's best (none against its own family).
        if (best->second != ranked_.front()) f.phases = phase_differences(out_.top_points[0], point_of(best->second));
      }
      out_.families.push_back(f);
    }
    if (out_.runner_up) out_.runner_up_phases = phase_differences(out_.top_points[0], out_.top_points[*out_.runner_up]);
    if (!ranked_.empty() && uses_tp(out_.records[ranked_.front()]) && no_tp_best_) {
      const SweepPoint without = point_of(*no_tp_best_);
      out_.best_without_tp = no_tp_best_;
      out_.without_tp_step_difference_s = without.result->step_time_s - out_.top_points[0].result->step_time_s;
      out_.without_tp_phases = phase_differences(out_.top_points[0], without);
    }
    out_.frontier = memory_frontier(out_.records);
  }

  const ScenarioSource& source_;
  Scenario base_;
  Scenario lean_;                               // base_ without its hardware document
  Inventory base_inventory_;                    // the model's, shared by every candidate that keeps its architecture
  PlanStructures structures_{base_inventory_};  // ledger structures shared by the screened candidates
  PlanSearchResult out_;
  std::vector<std::size_t> ranked_;  // record indices, best first, at most top_k
  std::map<std::string, std::size_t> family_best_;
  std::optional<std::size_t> no_tp_best_;  // the best replayed plan that fits without TP
  std::map<std::size_t, SweepPoint> points_;
  std::size_t replayed_ = 0;
  std::mutex progress_mutex_;
  std::string_view progress_stage_;
  std::size_t progress_done_ = 0;
};

}  // namespace

PlanSearchResult search_plans(const ScenarioSource& source, const PlanSpace& space, const PlanSearchOptions& options) {
  return Search(source, space, options).run();
}

}  // namespace moesim
