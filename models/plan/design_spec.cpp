#include "models/plan/design_spec.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/plan_keys.hpp"

namespace moesim {

namespace {

// The parts every design takes: pipeline degree, interleaving, the named schedules and the
// low-precision recipes.
// A flag that starts like a numbered part comes before it ("tpoverlap" before "tp").
constexpr GrammarPart kCommonParts[] = {{"pp", "plan.pipeline.degree", true, ""},
                                        {"tpoverlap", "plan.tensor_parallel.comm_overlap", false, "true"},
                                        {"tp", "plan.tensor_parallel.degree", true, ""},
                                        {"cp", "plan.context_parallel.degree", true, ""},
                                        {"ulysses", "plan.context_parallel.variant", false, "\"all_to_all\""},
                                        {"nosp", "plan.tensor_parallel.sequence_parallel", false, "false"}};
constexpr const char* kCommonAllowed =
    "+tpN (tensor parallelism, with sequence parallelism unless +nosp; +tpoverlap overlaps its collectives with "
    "the GEMMs), +cpN (context parallelism, a ring unless "
    "+ulysses), +ppN, +vN (interleaved virtual stages), "
    "+1f1b_v, +zb_h1 or +zbv (pipeline schedules), +fp8, +mxfp8 or +bf16 "
    "(every linear but the LM head)";

// The common fields a spec resets before its parts apply: no TP (with SP when TP is asked),
// plain 1F1B, an even layer split (and no Megatron layout or uneven split: kMegatronSplitKeys).
constexpr std::pair<std::string_view, std::string_view> kCommonResets[] = {
    {"plan.tensor_parallel.degree", "1"},           {"plan.tensor_parallel.sequence_parallel", "true"},
    {"plan.tensor_parallel.comm_overlap", "false"}, {"plan.context_parallel.degree", "1"},
    {"plan.context_parallel.variant", "\"ring\""},  {"plan.pipeline.schedule", "\"1f1b\""},
    {"plan.pipeline.virtual_stages", "1"},          {"plan.pipeline.layer_split", "[]"},
    {"plan.expert_parallel.tensor_degree", "1"}};

// The pipeline schedules a design names by their scenario key (plan.pipeline.schedule) and the
// model chunks each runs per stage.
constexpr std::pair<PipelineSchedule, std::int64_t> kNamedSchedules[] = {
    {PipelineSchedule::one_f_one_b_v, 2}, {PipelineSchedule::zb_h1, 1}, {PipelineSchedule::zbv, 2}};

// The registered designs that answer to `word`.
std::vector<const DesignEntry*> entries_of(std::string_view word) {
  std::vector<const DesignEntry*> out;
  for (const auto& name : design_entries().names()) {
    const DesignEntry& entry = design_entries().get(name);
    if (entry.word() == word) out.push_back(&entry);
  }
  return out;
}

// Every part a word's designs take, without repeats.
std::vector<GrammarPart> parts_of(std::string_view word) {
  std::vector<GrammarPart> out;
  for (const DesignEntry* entry : entries_of(word)) {
    for (const GrammarPart& part : entry->parts()) {
      const bool known = std::any_of(out.begin(), out.end(), [&](const GrammarPart& p) { return p.word == part.word; });
      if (!known) out.push_back(part);
    }
  }
  return out;
}

std::string allowed_text() {
  std::string out;
  for (const std::string& word : design_words()) {
    out += (out.empty() ? "" : " or ") + word;
    std::string own;
    for (const GrammarPart& part : parts_of(word)) {
      own += (own.empty() ? "" : ", ") + std::string("+") + std::string(part.word) + (part.numbered ? "N" : "");
    }
    if (!own.empty()) out += " (" + own + ")";
  }
  return out + ", then " + kCommonAllowed;
}

// What a bad part ("epp8", or "ep8" after fsdp) was likely meant as, its digits set aside, then
// the allowed parts.
std::string part_hint(const std::string& token, std::string_view word) {
  const std::string allowed = "allowed: " + allowed_text();
  const std::string stem = token.substr(0, token.find_first_of("0123456789"));
  std::vector<std::string> own;
  for (const GrammarPart& part : parts_of(word)) own.emplace_back(part.word);
  own.insert(own.end(),
             {"tp", "nosp", "tpoverlap", "cp", "ulysses", "pp", "v", "1f1b_v", "zb_h1", "zbv", "fp8", "mxfp8", "bf16"});
  if (std::find(own.begin(), own.end(), stem) != own.end()) return "; " + allowed;
  for (const std::string& other : design_words()) {
    if (other == word) continue;
    for (const GrammarPart& part : parts_of(other)) {
      if (part.word == stem) return "; +" + stem + " is a " + other + " part; " + allowed;
    }
  }
  return did_you_mean(stem, own, allowed);
}

std::int64_t number_after(const std::string& token, std::size_t prefix, const std::string& spec,
                          std::string_view word) {
  const std::string digits = token.substr(prefix);
  if (digits.empty() || digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(digits) < 1) {
    throw InputError("design", spec, "bad part '" + token + "'" + part_hint(token, word));
  }
  return std::stoll(digits);
}

// The part `token` names among `parts`: a flag by its whole word, a numbered one by its prefix.
const GrammarPart* find_part(const std::vector<GrammarPart>& parts, const std::string& token) {
  for (const GrammarPart& part : parts) {
    if (part.numbered ? token.rfind(part.word, 0) == 0 : token == part.word) return &part;
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, nlohmann::json>> precision_recipe_overrides(const std::string& format) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const PlanKey& key : precision_recipe_plan_keys()) out.emplace_back(std::string(key.dotted), format);
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
  const std::string& word = tokens.front();
  const std::vector<const DesignEntry*> entries = entries_of(word);
  if (entries.empty()) {
    const std::vector<std::string> words = design_words();
    std::string either;
    for (std::size_t i = 0; i < words.size(); ++i) {
      either += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    }
    throw InputError("design", spec,
                     "must start with " + either + did_you_mean(word, words, "allowed: " + allowed_text()));
  }
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& [path, value] : entries.front()->word_fields()) out.emplace_back(path, nlohmann::json::parse(value));
  // A spec names the whole layout: what its parts do not set is reset, so that a plan's name
  // (design_name) read back gives the same plan.
  for (const auto& [path, value] : kCommonResets) out.emplace_back(path, nlohmann::json::parse(value));
  for (const PlanKey& key : megatron_split_plan_keys()) out.emplace_back(std::string(key.dotted), nullptr);
  std::vector<GrammarPart> parts = parts_of(word);
  parts.insert(parts.end(), std::begin(kCommonParts), std::end(kCommonParts));
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const auto named = std::find_if(std::begin(kNamedSchedules), std::end(kNamedSchedules),
                                    [&t](const auto& entry) { return name_of(entry.first) == t; });
    if (named != std::end(kNamedSchedules)) {
      out.emplace_back("plan.pipeline.schedule", t);
      out.emplace_back("plan.pipeline.virtual_stages", named->second);
    } else if (const GrammarPart* part = find_part(parts, t)) {
      if (part->numbered) {
        out.emplace_back(std::string(part->path), number_after(t, part->word.size(), spec, word));
      } else {
        out.emplace_back(std::string(part->path), nlohmann::json::parse(part->value));
      }
    } else if (t.rfind("v", 0) == 0 && t.size() > 1) {
      out.emplace_back("plan.pipeline.schedule", "interleaved_1f1b");
      out.emplace_back("plan.pipeline.virtual_stages", number_after(t, 1, spec, word));
    } else if (t == "fp8" || t == "mxfp8" || t == "bf16") {
      const auto recipe = precision_recipe_overrides(t);
      out.insert(out.end(), recipe.begin(), recipe.end());
    } else {
      throw InputError("design", spec, "bad part '" + t + "'" + part_hint(t, word));
    }
  }
  return out;
}

std::string design_name(const ParallelPlan& p) {
  const NameParts own = design_of(p).name_parts(p);
  std::string out = p.design + own.after_word;
  if (p.tp > 1) out += "+tp" + std::to_string(p.tp) + (p.sequence_parallel ? "" : "+nosp");
  if (p.tp > 1 && p.tp_comm_overlap) out += "+tpoverlap";
  if (p.cp > 1) out += "+cp" + std::to_string(p.cp) + (p.cp_variant == CpVariant::ring ? "" : "+ulysses");
  if (p.ep > 1) out += "+ep" + std::to_string(p.ep);
  if (p.etp > 1) out += "+etp" + std::to_string(p.etp);
  if (p.pp > 1) out += "+pp" + std::to_string(p.pp);
  if (p.pp > 1 && p.pp_schedule == PipelineSchedule::interleaved_1f1b) out += "+v" + std::to_string(p.pp_virtual);
  if (p.pp > 1 && p.pp_schedule != PipelineSchedule::interleaved_1f1b &&
      p.pp_schedule != PipelineSchedule::one_f_one_b) {
    out += '+';
    out += name_of(p.pp_schedule);
  }
  out += own.after_pipeline;
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
