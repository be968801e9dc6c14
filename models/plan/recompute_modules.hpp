// Megatron-Core's selective recompute modules (plan.activations.recompute_modules, with recompute
// "selective"; megatron/core/transformer/transformer_config.py recompute_modules), and what a
// plan's selective recompute redoes in a block.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/common/enum_names.hpp"

namespace moesim {

struct Architecture;
struct ParallelPlan;

//   core_attn       the core attention (checkpoint: q, k, v kept, its forward run again);
//   moe_act         the routed experts' activation (its output, the fc2 input, discarded);
//   layernorm       the norms that are modules of their own (MLA's input norm, an MoE layer's
//                   pre-MLP norm; a norm fused into a Transformer Engine LayerNormLinear is not);
//   mla_up_proj     MLA's up projections and RoPE (q, k and v discarded, the latents kept);
//   mlp             a dense layer's MLP (checkpoint: its input kept);
//   moe             an MoE layer whole (checkpoint: its input kept);
//   shared_experts  the shared experts (checkpoint).
enum class RecomputeModule : std::uint8_t { core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts };
inline constexpr EnumNames<RecomputeModule, 7> kRecomputeModuleNames{
    "recompute module",
    {{{RecomputeModule::core_attn, "core_attn"},
      {RecomputeModule::moe_act, "moe_act"},
      {RecomputeModule::layernorm, "layernorm"},
      {RecomputeModule::mla_up_proj, "mla_up_proj"},
      {RecomputeModule::mlp, "mlp"},
      {RecomputeModule::moe, "moe"},
      {RecomputeModule::shared_experts, "shared_experts"}}}};
constexpr std::string_view name_of(RecomputeModule value) { return kRecomputeModuleNames.name(value); }

// A set of modules (empty: none listed).
using RecomputeModules = EnumSet<RecomputeModule>;

// What the plan's selective recompute redoes in a block. Without a module list, Korthikanti et
// al. 2022's choice: every SwiGLU product (dense, shared and routed) and the unfused core
// attention; with one, exactly Megatron-Core's listed modules. All false without selective.
struct SelectiveRecompute {
  bool modules = false;  // a module list decides (Megatron-Core), not the SwiGLU-product rule
  bool dense_act = false, shared_act = false, routed_act = false;
  bool core_attn = false, layernorm = false, mla_up_proj = false;
  bool mlp = false, moe = false, shared_experts = false;
};
SelectiveRecompute selective_recompute(const ParallelPlan& plan);

// Whether full recompute redoes `layer`: every layer, or with activations.recompute_num_layers N
// (Megatron-Core's recompute_method "block", transformer_block.py _checkpointed_forward) the
// first N layers of each model chunk, the others keeping all they save. False without full.
bool whole_layer_recompute(const ParallelPlan& plan, const Architecture& arch, std::int64_t layer);

}  // namespace moesim
