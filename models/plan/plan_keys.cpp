#include "models/plan/plan_keys.hpp"

#include <string>

#include "models/common/errors.hpp"
#include "models/plan/pipeline_layout.hpp"

namespace moesim {

const std::vector<PlanKey>& megatron_split_plan_keys() {
  static const std::vector<std::string> dotted = [] {
    std::vector<std::string> out;
    for (const std::string_view key : kMegatronSplitKeys) out.push_back("plan.pipeline." + std::string(key));
    return out;
  }();
  static const std::vector<PlanKey> keys = [] {
    std::vector<PlanKey> out;
    for (std::size_t i = 0; i < dotted.size(); ++i) out.push_back({dotted[i], {"pipeline", kMegatronSplitKeys[i]}, 2});
    return out;
  }();
  return keys;
}

const std::vector<PlanKey>& precision_recipe_plan_keys() {
  static const std::vector<std::string> dotted = [] {
    std::vector<std::string> out;
    for (const LinearClass c : kRecipeClasses) out.push_back("plan.precision.linears." + std::string(name_of(c)));
    return out;
  }();
  static const std::vector<PlanKey> keys = [] {
    std::vector<PlanKey> out;
    for (std::size_t i = 0; i < dotted.size(); ++i)
      out.push_back({dotted[i], {"precision", "linears", name_of(kRecipeClasses[i])}, 3});
    return out;
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
