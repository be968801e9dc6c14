#include "models/plan/design_spec.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

namespace {
constexpr const char* kAllowed =
    "fsdp or ddp, then +epN, +ppN, +vN (interleaved virtual stages), +1f1b_v, +zb_h1 or +zbv (pipeline schedules), "
    "+hsdpN (fsdp), +nodistopt (ddp), +fp8, +mxfp8 or +bf16 (every linear but the LM head)";

// The pipeline schedules a design names by their scenario key (plan.pipeline.schedule) and the
// model chunks each runs per stage.
constexpr std::pair<PipelineSchedule, std::int64_t> kNamedSchedules[] = {
    {PipelineSchedule::one_f_one_b_v, 2}, {PipelineSchedule::zb_h1, 1}, {PipelineSchedule::zbv, 2}};

// The linear classes "+fp8" / "+mxfp8" convert: every linear but the LM head and the router, the
// recipe of torchtitan's MXFP8 training and of Olmo-core's MXFP8 ladder ("all linear layers
// except lm_head", src/scripts/train/ladder/2026Q1/experiments.md).
constexpr LinearClass kRecipeClasses[] = {LinearClass::attention, LinearClass::dense_mlp, LinearClass::shared_expert,
                                          LinearClass::routed_expert};

// What a bad part ("epp8", or "ep8" after fsdp) was likely meant as, its digits set aside, then
// the allowed parts.
std::string part_hint(const std::string& token, bool fsdp) {
  const std::string allowed = std::string("allowed: ") + kAllowed;
  const std::string word = token.substr(0, token.find_first_of("0123456789"));
  const std::vector<std::string> fsdp_parts = {"pp", "v", "1f1b_v", "zb_h1", "zbv", "hsdp", "fp8", "mxfp8", "bf16"},
                                 ddp_parts = {"ep",  "pp",        "v",   "1f1b_v", "zb_h1",
                                              "zbv", "nodistopt", "fp8", "mxfp8",  "bf16"};
  const auto& own = fsdp ? fsdp_parts : ddp_parts;
  const auto& other = fsdp ? ddp_parts : fsdp_parts;
  const auto holds = [&word](const std::vector<std::string>& parts) {
    return std::find(parts.begin(), parts.end(), word) != parts.end();
  };
  if (holds(own)) return "; " + allowed;
  if (holds(other)) return std::string("; +") + word + " is a " + (fsdp ? "ddp" : "fsdp") + " part; " + allowed;
  return did_you_mean(word, own, allowed);
}

std::int64_t number_after(const std::string& token, std::size_t prefix, const std::string& spec, bool fsdp) {
  const std::string digits = token.substr(prefix);
  if (digits.empty() || digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(digits) < 1) {
    throw InputError("design", spec, "bad part '" + token + "'" + part_hint(token, fsdp));
  }
  return std::stoll(digits);
}
}  // namespace

std::vector<std::pair<std::string, nlohmann::json>> precision_recipe_overrides(const std::string& format) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (LinearClass c : kRecipeClasses) {
    std::string path = "plan.precision.linears.";
    path += name_of(c);
    out.emplace_back(path, format);
  }
  return out;
}

std::vector<std::pair<std::string, nlohmann::json>> design_overrides(const std::string& spec) {
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const auto plus = spec.find('+', start);
    tokens.push_back(spec.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  if (tokens.front() != "fsdp" && tokens.front() != "ddp") {
    throw InputError("design", spec,
                     "must start with fsdp or ddp" +
                         did_you_mean(tokens.front(), {"fsdp", "ddp"}, "allowed: " + std::string(kAllowed)));
  }
  const bool fsdp = tokens.front() == "fsdp";
  std::vector<std::pair<std::string, nlohmann::json>> out = {
      {"plan.design", tokens.front()}, {"plan.expert_parallel.degree", 1}, {"plan.pipeline.degree", 1}};
  if (fsdp) out.emplace_back("plan.fsdp.shard_degree", 0);
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const auto named = std::find_if(std::begin(kNamedSchedules), std::end(kNamedSchedules),
                                    [&t](const auto& entry) { return name_of(entry.first) == t; });
    if (named != std::end(kNamedSchedules)) {
      out.emplace_back("plan.pipeline.schedule", t);
      out.emplace_back("plan.pipeline.virtual_stages", named->second);
    } else if (t.rfind("hsdp", 0) == 0 && fsdp)
      out.emplace_back("plan.fsdp.shard_degree", number_after(t, 4, spec, fsdp));
    else if (t.rfind("ep", 0) == 0 && !fsdp)
      out.emplace_back("plan.expert_parallel.degree", number_after(t, 2, spec, fsdp));
    else if (t.rfind("pp", 0) == 0)
      out.emplace_back("plan.pipeline.degree", number_after(t, 2, spec, fsdp));
    else if (t.rfind("v", 0) == 0 && t.size() > 1) {
      out.emplace_back("plan.pipeline.schedule", "interleaved_1f1b");
      out.emplace_back("plan.pipeline.virtual_stages", number_after(t, 1, spec, fsdp));
    } else if (t == "nodistopt" && !fsdp) {
      out.emplace_back("plan.ddp.distributed_optimizer", false);
    } else if (t == "fp8" || t == "mxfp8" || t == "bf16") {
      const auto recipe = precision_recipe_overrides(t);
      out.insert(out.end(), recipe.begin(), recipe.end());
    } else
      throw InputError("design", spec, "bad part '" + t + "'" + part_hint(t, fsdp));
  }
  return out;
}

std::string design_name(const ParallelPlan& p) {
  std::string out(name_of(p.design));
  if (p.design == Design::fsdp && p.fsdp_shard != 0 && p.fsdp_shard < p.dp())
    out += "+hsdp" + std::to_string(p.fsdp_shard);
  if (p.ep > 1) out += "+ep" + std::to_string(p.ep);
  if (p.pp > 1) out += "+pp" + std::to_string(p.pp);
  if (p.pp > 1 && p.pp_schedule == PipelineSchedule::interleaved_1f1b) out += "+v" + std::to_string(p.pp_virtual);
  if (p.pp > 1 && p.pp_schedule != PipelineSchedule::interleaved_1f1b &&
      p.pp_schedule != PipelineSchedule::one_f_one_b) {
    out += '+';
    out += name_of(p.pp_schedule);
  }
  if (p.design == Design::ddp && !p.distributed_optimizer) out += "+nodistopt";
  if (p.precision.any_low_precision()) {
    // The recipe's name when every class it converts shares one format and the head stays BF16;
    // otherwise each converted class with its format.
    const GemmPrecision first = p.precision.linear(LinearClass::attention);
    bool recipe = first != GemmPrecision::bf16 && p.precision.linear(LinearClass::lm_head) == GemmPrecision::bf16;
    for (LinearClass c : kRecipeClasses) recipe = recipe && p.precision.linear(c) == first;
    if (recipe) {
      out += '+';
      out += name_of(first);
    } else {
      for (std::size_t k = 0; k < kLinearClasses; ++k) {
        if (p.precision.linears[k] == GemmPrecision::bf16) continue;
        out += '+';
        out += name_of(static_cast<LinearClass>(k));
        out += '-';
        out += name_of(p.precision.linears[k]);
      }
    }
  }
  return out;
}

}  // namespace moesim
