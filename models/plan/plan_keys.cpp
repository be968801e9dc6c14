#include "models/plan/plan_keys.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "models/common/errors.hpp"
#include "models/plan/pipeline_layout.hpp"

namespace moesim {

namespace {

// The keys plan.<parents>.<name> for each of `names` (static strings); their dotted texts live in
// `dotted`, made once and never resized after.
std::vector<PlanKey> keys_under(std::vector<std::string_view> parents, const std::vector<std::string_view>& names,
                                std::vector<std::string>& dotted) {
  std::string prefix = "plan.";
  for (const std::string_view p : parents) prefix += std::string(p) + ".";
  for (const std::string_view name : names) dotted.push_back(prefix + std::string(name));
  std::vector<PlanKey> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    PlanKey key{dotted[i], {}, parents.size() + 1};
    std::copy(parents.begin(), parents.end(), key.keys.begin());
    key.keys[parents.size()] = names[i];
    out.push_back(key);
  }
  return out;
}

}  // namespace

const std::vector<PlanKey>& megatron_split_plan_keys() {
  static std::vector<std::string> dotted;
  static const std::vector<PlanKey> keys =
      keys_under({"pipeline"}, {std::begin(kMegatronSplitKeys), std::end(kMegatronSplitKeys)}, dotted);
  return keys;
}

const std::vector<PlanKey>& precision_recipe_plan_keys() {
  static std::vector<std::string> dotted;
  static const std::vector<PlanKey> keys = [] {
    std::vector<std::string_view> names;
    for (const LinearClass c : kRecipeClasses) names.push_back(name_of(c));
    return keys_under({"precision", "linears"}, names, dotted);
  }();
  return keys;
}

void write_plan_set(nlohmann::json& plan, const PlanSet& set) {
  nlohmann::json* node = &plan;
  for (std::size_t k = 0; k < set.key->depth; ++k) {
    const std::string key(set.key->keys[k]);
    if (node->is_null()) *node = nlohmann::json::object();
    if (!node->is_object()) {
      throw InputError("plan", std::string(set.key->dotted),
                       "cannot set key \"" + key + "\": its section is not an object");
    }
    if (set.value.is_null()) {  // null removes the key; nothing is made on the way
      const auto it = node->find(key);
      if (it == node->end()) return;
      if (k + 1 == set.key->depth) {
        node->erase(it);
        return;
      }
      node = &*it;
      continue;
    }
    node = &(*node)[key];
  }
  *node = set.value;
}

}  // namespace moesim
