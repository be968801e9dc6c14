// The plan search's axes, their defaults and restrictions, and the enumeration of candidates.
#include "studies/plan_space.hpp"

#include <algorithm>
#include <numeric>

#include "models/common/json_reader.hpp"
#include "models/common/suggest.hpp"
#include "models/plan/designs/design.hpp"
#include "studies/sweep.hpp"

namespace moesim {

namespace {

const std::vector<std::string> kRecompute = {"none", "selective", "full"};
const std::vector<std::string> kLayouts = {"per_tensor", "concat_then_shard", "same_param_count"};
// The layer split with PP: even (ceil per virtual stage, the short one last) or balanced by
// compute with the embedding and LM head counted (sim/layer_split.hpp). Only the even split is
// searched unless asked (--search split=even,balanced): balancing doubles the pipelined plans and
// their replays (the DeepSeek-V3-like model on 1024 GPUs: its best balanced plan ran 0.2% slower
// than its best even one, interleaving already spreading the LM head's weight).
const std::vector<std::string> kSplits = {"even", "balanced"};
const std::vector<std::string> kDefaultSplits = {"even"};
// The linears' GEMM format: the scenario's own (default), or one recipe (every linear but the LM
// head and the router, as design_spec's +fp8 / +mxfp8 parts) searched with --search precision=...
const std::vector<std::string> kPrecisions = {"scenario", "bf16", "fp8", "mxfp8"};
const std::vector<std::string> kDefaultPrecisions = {"scenario"};
// Interleaved 1F1B with 2 and 4 virtual stages: the depths Megatron-LM's and Olmo-core's
// production configurations use; others can be asked for with --search schedule=vN, and the
// V-shape and zero-bubble ones with --search schedule=1f1b_v,zb_h1,zbv.
const std::vector<std::string> kSchedules = {"1f1b", "v2", "v4"};
// Rank microbatches of 1 to 8 sequences: the range the seed's Figure 8 runs and Olmo-core's
// configurations span (larger ones rarely fit beside an MoE's activations).
const std::vector<std::int64_t> kMicrobatches = {1, 2, 4, 8};

// Tensor-parallel degrees searched by default for a dense model: powers of two up to 8 inside one
// NVLink domain, the range Megatron-LM's and torchtitan's published configurations use (TP
// crosses no NIC). An MoE model searches TP 1 unless asked (--search tp=1,2,4): its experts are
// not tensor-parallel here, and fine-grained MoE runs (DeepSeek-V3, Olmo-core's) use EP instead;
// searching TP for them would quadruple a search's candidates for plans rarely chosen.
constexpr std::int64_t kMaxDefaultTp = 8;

std::vector<nlohmann::json> as_values(const std::vector<std::string>& words) { return {words.begin(), words.end()}; }

// The design axis: every registered design's planner families (models/plan/designs/), all of them
// or those searched unless asked.
std::vector<std::string> family_names(bool defaults_only) {
  std::vector<std::string> out;
  for (const PlannerFamily& f : planner_families()) {
    if (f.searched_by_default || !defaults_only) out.emplace_back(f.name);
  }
  return out;
}

std::vector<nlohmann::json> divisors_up_to(std::int64_t n, std::int64_t limit) {
  std::vector<nlohmann::json> out;
  for (std::int64_t d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.emplace_back(d);
  return out;
}

// Checks one restricted axis's values: words from `allowed`, or integers >= 1.
void check_values(const std::string& expr, const PlanAxis& axis) {
  const auto fail = [&](const std::string& what) { throw InputError("--search", expr, what); };
  for (const auto& v : axis.values) {
    if (axis.name == "design" || axis.name == "recompute" || axis.name == "layout" || axis.name == "split" ||
        axis.name == "precision") {
      static const std::vector<std::string> families = family_names(false);
      const auto& allowed = axis.name == "design"      ? families
                            : axis.name == "recompute" ? kRecompute
                            : axis.name == "layout"    ? kLayouts
                            : axis.name == "split"     ? kSplits
                                                       : kPrecisions;
      const std::string word = v.is_string() ? v.get<std::string>() : v.dump();
      if (std::find(allowed.begin(), allowed.end(), word) == allowed.end())
        fail("'" + word + "' is not a " + axis.name + did_you_mean(word, allowed, "allowed: " + comma_joined(allowed)));
    } else if (axis.name == "schedule") {
      if (!v.is_string() || plan_schedule_virtual_stages(v.get<std::string>()) == 0)
        fail("'" + brief(v) +
             "' is not a schedule; allowed: 1f1b, vN (interleaved 1F1B, N >= 2 virtual stages), 1f1b_v, zb_h1 or zbv");
    } else if (!v.is_number_integer() || v.get<std::int64_t>() < 1) {
      fail("'" + brief(v) + "' is not a " + axis.name + " degree; allowed: integers >= 1");
    }
  }
}

}  // namespace

std::int64_t plan_schedule_virtual_stages(const std::string& schedule) {
  if (schedule == "1f1b" || schedule == "zb_h1") return 1;
  if (schedule == "1f1b_v" || schedule == "zbv") return 2;
  if (schedule.size() < 2 || schedule[0] != 'v' || schedule.size() > 4) return 0;
  if (schedule.find_first_not_of("0123456789", 1) != std::string::npos) return 0;
  const std::int64_t v = std::stoll(schedule.substr(1));
  return v >= 2 ? v : 0;
}

std::string plan_schedule_key(const std::string& schedule) {
  return schedule.size() > 1 && schedule[0] == 'v' ? "interleaved_1f1b" : schedule;
}

const std::vector<std::string>& plan_axis_names() {
  static const std::vector<std::string> names = {"design", "hsdp",  "tp",       "cp",         "ep",
                                                 "etp",    "pp",    "schedule", "microbatch", "recompute",
                                                 "layout", "split", "precision"};
  return names;
}

ScenarioSource plan_source(ScenarioSource source, const PlanRequest& request) {
  if (request.gpus_per_node < 1) return source;
  const nlohmann::json& plan = source.inputs.doc.at("plan");
  const auto integer = [&](const char* key, std::int64_t fallback) {
    const auto it = plan.find(key);
    return it != plan.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 ? it->get<std::int64_t>()
                                                                                      : fallback;
  };
  const ParallelPlan defaults;
  const std::int64_t world = integer("nodes", defaults.nodes) * integer("gpus_per_node", defaults.gpus_per_node);
  const std::int64_t host = std::gcd(world, request.gpus_per_node);
  return with_changes(std::move(source),
                      changes_of({{"plan.gpus_per_node", host}, {"plan.nodes", world / host}}, "--gpus-per-node"));
}

PlanSpace plan_space(const ScenarioSource& source, const Scenario& base, const PlanRequest& request) {
  PlanSpace space;
  if (request.gpus < 1) throw InputError("--gpus", std::to_string(request.gpus), "allowed: an integer >= 1");
  space.gpus = request.gpus;
  space.max_candidates = request.max_candidates;
  space.gpus_per_node =
      request.gpus_per_node > 0 ? request.gpus_per_node : std::min(base.plan.gpus_per_node, request.gpus);
  const auto host = static_cast<std::int64_t>(base.hardware.node.gpus_per_node.value);
  if (space.gpus_per_node > host) {
    throw InputError("--gpus-per-node", std::to_string(space.gpus_per_node),
                     "exceeds the " + std::to_string(host) + " GPUs of one host of hardware profile \"" +
                         base.hardware.name + "\"; allowed: 1.." + std::to_string(host) +
                         " (an NVLink domain of several hosts is the profile's interconnect.intra_node.domain_gpus)");
  }
  if (request.gpus % space.gpus_per_node != 0) {
    throw InputError("--gpus", std::to_string(request.gpus),
                     "is not a multiple of the GPUs per node (" + std::to_string(space.gpus_per_node) +
                         "); allowed: whole nodes, or set --gpus-per-node");
  }
  space.global_batch_tokens =
      request.global_batch_tokens > 0 ? request.global_batch_tokens : base.plan.global_batch_tokens;
  const std::int64_t experts = base.arch.moe ? base.arch.moe->num_experts : 1;
  std::vector<nlohmann::json> hsdp;
  for (std::int64_t f = space.gpus_per_node; f < space.gpus; f *= 2) hsdp.emplace_back(f);  // whole nodes
  std::vector<nlohmann::json> microbatch(kMicrobatches.begin(), kMicrobatches.end());
  if (std::find(microbatch.begin(), microbatch.end(), base.plan.microbatch_sequences) == microbatch.end())
    microbatch.emplace_back(base.plan.microbatch_sequences);
  std::vector<nlohmann::json> tp;
  const std::int64_t domain = base.plan.domain_hosts * space.gpus_per_node;
  const std::int64_t max_tp = base.arch.moe ? 1 : std::min(kMaxDefaultTp, domain);
  for (std::int64_t t = 1; t <= max_tp; t *= 2) {
    if (space.gpus % t == 0) tp.emplace_back(t);
  }
  space.axes = {{"design", as_values(family_names(true))},
                {"hsdp", hsdp},
                {"tp", tp},
                {"cp", {1}},  // context parallelism when asked (--search cp=1,2,4): long-context runs
                {"ep", divisors_up_to(std::gcd(experts, space.gpus), space.gpus)},
                {"etp", {base.plan.etp}},  // expert TP when asked (--search etp=1,2): the base plan's by default
                {"pp", divisors_up_to(space.gpus, base.arch.num_layers)},
                {"schedule", as_values(kSchedules)},
                {"microbatch", microbatch},
                {"recompute", as_values(kRecompute)},
                {"layout", as_values(kLayouts)},
                {"split", as_values(kDefaultSplits)},
                {"precision", as_values(kDefaultPrecisions)}};
  for (const auto& expr : request.search) {
    SweepAxis parsed = parse_axis(expr);
    const auto& names = plan_axis_names();
    if (parsed.path.find('.') == std::string::npos) {
      const auto named = std::find(names.begin(), names.end(), parsed.path);
      if (named == names.end()) {
        throw InputError("--search", expr,
                         "unknown axis '" + parsed.path + "'" +
                             did_you_mean(parsed.path, names,
                                          "allowed: " + comma_joined(names) + ", or a scenario path (plan.x.y)"));
      }
      PlanAxis& axis = space.axes[static_cast<std::size_t>(named - names.begin())];
      axis.values = parsed.values;
      check_values(expr, axis);
      continue;
    }
    // A scenario path: checked against the base scenario the way sweep axes are.
    SweepSpec probe;
    probe.axes.push_back(parsed);
    expand_points(source, probe);
    space.axes.push_back({parsed.path, parsed.values});
  }
  return space;
}

}  // namespace moesim
