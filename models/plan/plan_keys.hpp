// The plan-section keys that code writes: a plan search's candidate and a design's planner family
// set typed values at these keys of a composed plan document, which the one plan parser then
// reads (no dotted path is parsed on the way). Each key knows its JSON keys under the plan section
// and its dotted name, which reports print as the `--set` that reproduces a candidate.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct PlanKey {
  std::string_view dotted;                 // "plan.pipeline.degree"
  std::array<std::string_view, 3> keys{};  // {"pipeline", "degree"}: the keys under the plan section
  std::size_t depth = 0;                   // how many of `keys` are used
};

// The keys, by the field they set.
namespace plan_key {
inline constexpr PlanKey design{"plan.design", {"design"}, 1};
inline constexpr PlanKey nodes{"plan.nodes", {"nodes"}, 1};
inline constexpr PlanKey gpus_per_node{"plan.gpus_per_node", {"gpus_per_node"}, 1};
inline constexpr PlanKey global_batch_tokens{"plan.batch.global_batch_tokens", {"batch", "global_batch_tokens"}, 2};
inline constexpr PlanKey microbatch_sequences{
    "plan.batch.rank_microbatch_sequences", {"batch", "rank_microbatch_sequences"}, 2};
inline constexpr PlanKey tp_degree{"plan.tensor_parallel.degree", {"tensor_parallel", "degree"}, 2};
inline constexpr PlanKey cp_degree{"plan.context_parallel.degree", {"context_parallel", "degree"}, 2};
inline constexpr PlanKey ep_degree{"plan.expert_parallel.degree", {"expert_parallel", "degree"}, 2};
inline constexpr PlanKey etp_degree{"plan.expert_parallel.tensor_degree", {"expert_parallel", "tensor_degree"}, 2};
inline constexpr PlanKey pp_degree{"plan.pipeline.degree", {"pipeline", "degree"}, 2};
inline constexpr PlanKey pp_schedule{"plan.pipeline.schedule", {"pipeline", "schedule"}, 2};
inline constexpr PlanKey pp_virtual_stages{"plan.pipeline.virtual_stages", {"pipeline", "virtual_stages"}, 2};
inline constexpr PlanKey pp_layer_split{"plan.pipeline.layer_split", {"pipeline", "layer_split"}, 2};
inline constexpr PlanKey recompute{"plan.activations.recompute", {"activations", "recompute"}, 2};
inline constexpr PlanKey recompute_modules{
    "plan.activations.recompute_modules", {"activations", "recompute_modules"}, 2};
inline constexpr PlanKey recompute_num_layers{
    "plan.activations.recompute_num_layers", {"activations", "recompute_num_layers"}, 2};
inline constexpr PlanKey fsdp_shard_degree{"plan.fsdp.shard_degree", {"fsdp", "shard_degree"}, 2};
inline constexpr PlanKey fsdp_reshard_after_forward{
    "plan.fsdp.reshard_after_forward", {"fsdp", "reshard_after_forward"}, 2};
inline constexpr PlanKey fsdp_implementation{"plan.fsdp.implementation", {"fsdp", "implementation"}, 2};
inline constexpr PlanKey distributed_optimizer{"plan.ddp.distributed_optimizer", {"ddp", "distributed_optimizer"}, 2};
inline constexpr PlanKey optimizer_layout{"plan.optimizer.layout", {"optimizer", "layout"}, 2};
}  // namespace plan_key

// The linear classes a precision recipe ("+fp8" / "+mxfp8", the planner's precision axis)
// converts: every linear but the LM head and the router, the recipe of torchtitan's MXFP8 training
// and of Olmo-core's MXFP8 ladder ("all linear layers except lm_head",
// src/scripts/train/ladder/2026Q1/experiments.md).
inline constexpr LinearClass kRecipeClasses[] = {LinearClass::attention, LinearClass::dense_mlp,
                                                 LinearClass::shared_expert, LinearClass::routed_expert};

// plan.pipeline.<key> for each of kMegatronSplitKeys (the keys that place layers the Megatron way).
const std::vector<PlanKey>& megatron_split_plan_keys();
// plan.precision.linears.<class> for the linear classes a precision recipe sets (design_spec.hpp).
const std::vector<PlanKey>& precision_recipe_plan_keys();

// A value code sets at a key; a null value removes the key (the document as if it never had it),
// as `--set PATH=null` does.
struct PlanSet {
  const PlanKey* key = nullptr;
  nlohmann::json value;
};

// Writes `set` into `plan` (a plan section document), making the objects on the way.
void write_plan_set(nlohmann::json& plan, const PlanSet& set);

}  // namespace moesim
