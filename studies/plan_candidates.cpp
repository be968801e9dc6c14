// The plan search's candidates: the product of its axes, with the axes that do not apply to a
// candidate collapsed, and the rules that refuse a combination before it is composed (the same
// facts validate_plan checks, told as the reason a planner counts).
#include <algorithm>
#include <functional>

#include "models/common/size_text.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/parallel_plan.hpp"
#include "studies/plan_space.hpp"

namespace moesim {

namespace {

const std::vector<nlohmann::json>& values_of(const PlanSpace& space, const std::string& name) {
  for (const auto& a : space.axes)
    if (a.name == name) return a.values;
  static const std::vector<nlohmann::json> none;
  return none;
}

struct Choice {
  PlannerFamily family;
  std::string schedule = "1f1b", recompute, layout, split = "even", precision = "scenario";
  std::int64_t hsdp = 0, tp = 1, cp = 1, ep = 1, etp = 1, pp = 1, microbatch = 1;
  std::vector<std::pair<std::string, nlohmann::json>> paths;
};

class Enumerator {
 public:
  Enumerator(const PlanSpace& space, const Scenario& base) : space_(space), base_(base) {
    for (const auto& a : space.axes) {
      if (a.name.find('.') == std::string::npos) continue;
      path_axes_.push_back(&a);
      arch_changes_ = arch_changes_ || a.name.rfind("architecture", 0) == 0;
    }
  }

  std::vector<PlanCandidate> all() {
    for (const auto& family : values_of(space_, "design")) {
      Choice c;
      c.family = planner_family(family.get<std::string>());
      for_each(c.family.hsdp_axis ? values_of(space_, "hsdp") : one(0), [&](const nlohmann::json& f) {
        c.hsdp = f.get<std::int64_t>();
        for_each(c.family.layout_axis ? values_of(space_, "layout") : one(""), [&](const nlohmann::json& l) {
          c.layout = l.get<std::string>();
          for_each(values_of(space_, "tp"), [&](const nlohmann::json& t) {
            c.tp = t.get<std::int64_t>();
            for_each(values_of(space_, "cp"), [&](const nlohmann::json& x) {
              c.cp = x.get<std::int64_t>();
              pipelines(c);
            });
          });
        });
      });
    }
    return std::move(out_);
  }

 private:
  static std::vector<nlohmann::json> one(nlohmann::json v) { return {std::move(v)}; }
  static void for_each(const std::vector<nlohmann::json>& values, const std::function<void(const nlohmann::json&)>& f) {
    for (const auto& v : values) f(v);
  }

  void pipelines(Choice& c) {
    for (const auto& pp : values_of(space_, "pp")) {
      c.pp = pp.get<std::int64_t>();
      // Without PP there is no schedule to choose.
      for_each(c.pp > 1 ? values_of(space_, "schedule") : one("1f1b"), [&](const nlohmann::json& s) {
        c.schedule = s.get<std::string>();
        for_each(c.pp > 1 ? values_of(space_, "split") : one("even"), [&](const nlohmann::json& split) {
          c.split = split.get<std::string>();
          for_each(c.family.ep_axis ? values_of(space_, "ep") : one(1), [&](const nlohmann::json& ep) {
            c.ep = ep.get<std::int64_t>();
            // Expert TP shards routed experts: one value (the base plan's) without them.
            for_each(base_.arch.moe ? values_of(space_, "etp") : one(base_.plan.etp), [&](const nlohmann::json& t) {
              c.etp = t.get<std::int64_t>();
              rest(c);
            });
          });
        });
      });
    }
  }

  void rest(Choice& c) {
    for_each(values_of(space_, "microbatch"), [&](const nlohmann::json& mb) {
      c.microbatch = mb.get<std::int64_t>();
      for_each(values_of(space_, "recompute"), [&](const nlohmann::json& r) {
        c.recompute = r.get<std::string>();
        for_each(values_of(space_, "precision"), [&](const nlohmann::json& f) {
          c.precision = f.get<std::string>();
          paths(c, 0);
        });
      });
    });
  }

  void paths(Choice& c, std::size_t axis) {
    if (axis == path_axes_.size()) {
      add(c);
      return;
    }
    for (const auto& v : path_axes_[axis]->values) {
      c.paths.emplace_back(path_axes_[axis]->name, v);
      paths(c, axis + 1);
      c.paths.pop_back();
    }
  }

  // Why the rules refuse `c`, or "" (the facts of validate_plan, checked without composing).
  std::string refusal(const Choice& c) const {
    const std::int64_t v = plan_schedule_virtual_stages(c.schedule);
    if (space_.gpus % c.pp != 0) return "PP degree does not divide the GPU count";
    if (space_.gpus % (c.pp * c.tp) != 0) return "PP x TP does not divide the GPU count";
    if (space_.gpus % (c.pp * c.tp * c.cp) != 0) return "PP x TP x CP does not divide the GPU count";
    const std::int64_t dp = space_.gpus / (c.pp * c.tp);
    if (c.hsdp > 0 && dp % c.hsdp != 0) return "HSDP shard degree does not divide the DP degree";
    if (c.hsdp >= dp) return "HSDP shard degree is not below the DP degree (that is plain FSDP)";
    if (c.ep > 1 && (dp * c.tp) % c.ep != 0) return "EP degree does not divide the ranks of a stage (TP x DP)";
    if (c.etp > 1 && (dp * c.tp) % (c.ep * c.etp) != 0)
      return "EP degree x expert TP does not divide the ranks of a stage (TP x DP)";
    // The design's own rules that the degrees decide (an FSDP shard group's EP, ...).
    const PlannerDegrees degrees{c.tp, c.ep, c.etp, dp, c.hsdp, base_.plan.ep_a2a_overlap};
    if (std::string why = c.family.entry->planner_refusal(degrees); !why.empty()) return why;
    if ((c.precision == "fp8" && !base_.hardware.compute.fp8_gemm) ||
        (c.precision == "mxfp8" && !base_.hardware.compute.mxfp8_gemm))
      return "the hardware profile has no " + c.precision + " GEMM rates";
    if (arch_changes_) return "";  // the architecture varies: compose checks the rest
    if (c.pp * v > base_.arch.num_layers) return "PP stages x virtual stages exceed the layers";
    if (c.tp > 1) {
      if (PlanRule rule = tensor_parallel_rule(base_.arch, c.tp, base_.plan.sequence_parallel); !rule.path.empty())
        return std::move(rule.message);
    }
    if (c.ep > 1) {
      if (PlanRule rule = expert_parallel_rule(base_.arch, c.ep); !rule.path.empty()) return std::move(rule.message);
      if (base_.plan.ep_a2a_overlap) {
        if (PlanRule rule = ep_a2a_overlap_rule(c.pp, plan_schedule_key(c.schedule), c.recompute); !rule.path.empty())
          return std::move(rule.message);
      }
    }
    if (c.etp > 1) {
      if (PlanRule rule = expert_parallel_rule(base_.arch, 1, c.etp); !rule.path.empty())
        return std::move(rule.message);
    }
    if (PlanRule rule = context_parallel_rule(base_.arch, c.cp); !rule.path.empty()) return std::move(rule.message);
    const std::int64_t step_tokens = c.microbatch * base_.arch.sequence_length * (dp / c.cp);
    if (space_.global_batch_tokens < step_tokens) return "global batch is smaller than one microbatch per DP rank";
    if (space_.global_batch_tokens % step_tokens != 0)
      return "global batch is not a whole number of microbatches per DP rank";
    if (plan_schedule_key(c.schedule) == "interleaved_1f1b" && (space_.global_batch_tokens / step_tokens) % c.pp != 0)
      return "interleaved 1F1B needs a microbatch count that is a multiple of the PP degree";
    const std::int64_t stage_layers = (base_.arch.num_layers + c.pp - 1) / c.pp;
    if (space_.global_batch_tokens / step_tokens > kMaxBlockPassesPerStage / stage_layers)
      return "more microbatches x layers per stage than one step's replay holds";
    return "";
  }

  void add(const Choice& c) {
    if (out_.size() == space_.max_candidates) refuse_size();
    PlanCandidate p;
    p.index = out_.size();
    p.family = std::string(c.family.name);
    p.values = nlohmann::json::object();
    p.values["design"] = p.family;
    if (c.family.hsdp_axis) p.values["hsdp"] = c.hsdp;
    p.values["tp"] = c.tp;
    if (c.cp > 1) p.values["cp"] = c.cp;
    p.values["ep"] = c.ep;
    if (c.etp > 1) p.values["etp"] = c.etp;
    p.values["pp"] = c.pp;
    if (c.pp > 1) p.values["schedule"] = c.schedule;
    if (c.pp > 1) p.values["split"] = c.split;
    p.balanced_split = c.split == "balanced";
    p.values["microbatch"] = c.microbatch;
    p.values["recompute"] = c.recompute;
    if (!c.layout.empty()) p.values["layout"] = c.layout;
    const std::int64_t v = plan_schedule_virtual_stages(c.schedule);
    p.sets = {{&plan_key::nodes, space_.gpus / space_.gpus_per_node},
              {&plan_key::gpus_per_node, space_.gpus_per_node},
              {&plan_key::global_batch_tokens, space_.global_batch_tokens}};
    p.sets.insert(p.sets.end(), c.family.sets.begin(), c.family.sets.end());
    p.sets.insert(p.sets.end(), {{&plan_key::tp_degree, c.tp},
                                 {&plan_key::cp_degree, c.cp},
                                 {&plan_key::ep_degree, c.ep},
                                 {&plan_key::pp_degree, c.pp},
                                 {&plan_key::pp_schedule, plan_schedule_key(c.schedule)},
                                 {&plan_key::pp_virtual_stages, v},
                                 {&plan_key::pp_layer_split, nlohmann::json::array()},
                                 {&plan_key::microbatch_sequences, c.microbatch},
                                 {&plan_key::recompute, c.recompute}});
    // Keys that belong to one recompute choice leave with it (null removes a key): the base
    // plan's Megatron-Core module list with selective, its first-N-layers count with full.
    if (c.recompute != "selective" && !base_.plan.recompute_modules.empty())
      p.sets.push_back({&plan_key::recompute_modules, nullptr});
    if (c.recompute != "full" && base_.plan.recompute_num_layers > 0)
      p.sets.push_back({&plan_key::recompute_num_layers, nullptr});
    // The base plan's Megatron layout or uneven split fits its own stages; a candidate splits
    // evenly or balanced.
    if (!base_.plan.pp_megatron.layout.empty() || base_.plan.pp_megatron.uneven()) {
      for (const PlanKey& key : megatron_split_plan_keys()) p.sets.push_back({&key, nullptr});
    }
    // Expert TP is written where it differs from the base plan's (the default axis keeps it).
    if (c.etp != base_.plan.etp) p.sets.push_back({&plan_key::etp_degree, c.etp});
    if (c.family.hsdp_axis) p.sets.push_back({&plan_key::fsdp_shard_degree, c.hsdp});
    if (!c.layout.empty()) p.sets.push_back({&plan_key::optimizer_layout, c.layout});
    if (c.precision != "scenario") {
      p.values["precision"] = c.precision;
      for (const PlanKey& key : precision_recipe_plan_keys()) p.sets.push_back({&key, c.precision});
    }
    for (const auto& [path, value] : c.paths) {
      p.values[path] = value;
      p.paths.emplace_back(path, value);
    }
    p.refusal = refusal(c);
    out_.push_back(std::move(p));
  }

  // More candidates than the limit: refused before they fill memory, with the axes' sizes.
  [[noreturn]] void refuse_size() const {
    double product = 1;
    std::string sizes;
    for (const auto& a : space_.axes) {
      product *= static_cast<double>(std::max<std::size_t>(1, a.values.size()));
      sizes += (sizes.empty() ? "" : " x ") + a.name + " " + std::to_string(a.values.size());
    }
    throw InputError("--max-candidates", std::to_string(space_.max_candidates),
                     "the search space holds more than " + std::to_string(space_.max_candidates) +
                         " candidate plans (its axes: " + sizes + ", up to " + number_json(product).dump() +
                         " combinations before the axes that do not apply collapse); narrow an axis with --search "
                         "AXIS=V1,V2 or raise --max-candidates (each candidate takes a few KB until it is screened)");
  }

  const PlanSpace& space_;
  const Scenario& base_;
  std::vector<const PlanAxis*> path_axes_;
  bool arch_changes_ = false;
  std::vector<PlanCandidate> out_;
};

}  // namespace

std::vector<PlanCandidate> enumerate_plans(const PlanSpace& space, const Scenario& base) {
  return Enumerator(space, base).all();
}

Scenario compose_candidate(const ScenarioSource& source, const Scenario& base, const PlanCandidate& candidate,
                           ResolvedRecord record) {
  if (!candidate.paths.empty()) return compose(source, candidate.sets, changes_of(candidate.paths), record);
  nlohmann::json plan = base.resolved.at("plan");
  for (const PlanSet& set : candidate.sets) write_plan_set(plan, set);
  return with_plan_section(source, base, std::move(plan));
}

PointOverrides candidate_changes(const PlanCandidate& candidate) {
  PointOverrides out;
  for (const PlanSet& set : candidate.sets) out.emplace_back(std::string(set.key->dotted), set.value);
  out.insert(out.end(), candidate.paths.begin(), candidate.paths.end());
  return out;
}

void set_layer_split(PlanCandidate& candidate, const std::vector<std::int64_t>& split) {
  for (PlanSet& set : candidate.sets)
    if (set.key == &plan_key::pp_layer_split) set.value = split;
}

}  // namespace moesim
