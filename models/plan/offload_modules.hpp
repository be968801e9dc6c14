// Megatron-Core's fine-grained activation offloading (plan.activations.offload_modules;
// megatron/core/pipeline_parallel/fine_grained_activation_offload.py and
// docs/user-guide/features/fine_grained_activation_offloading.md at d98e8a64dd): each listed
// module's saved input is copied to pinned host memory on a copy stream during the forward,
// its GPU storage released, and copied back before the module's backward. What each module
// moves is worked out where the block's saved tensors are (models/memory/activations.cpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "models/common/enum_names.hpp"

namespace moesim {

//   attn_norm   the attention's input norm's input, where the norm is a module of its own (MLA;
//               a norm fused into Transformer Engine's LayerNormLinear is an IdentityOp there);
//   qkv_linear  the QKV projection's input (with a fused norm, the block input it also keeps);
//   core_attn   the core attention's q, k, v and FP32 log-sum-exp;
//   attn_proj   the output projection's input, the attention output (needs core_attn: the core
//               attention's backward reads it too);
//   mlp_norm    an MoE layer's pre-MLP norm input (a dense MLP's norm is fused into its fc1);
//   expert_fc1  the routed experts' fc1 input (the dispatched rows);
//   moe_act     the routed experts' activation input (fc1's output).
enum class OffloadModule : std::uint8_t { attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act };
inline constexpr EnumNames<OffloadModule, 7> kOffloadModuleNames{"offload module",
                                                                 {{{OffloadModule::attn_norm, "attn_norm"},
                                                                   {OffloadModule::qkv_linear, "qkv_linear"},
                                                                   {OffloadModule::core_attn, "core_attn"},
                                                                   {OffloadModule::attn_proj, "attn_proj"},
                                                                   {OffloadModule::mlp_norm, "mlp_norm"},
                                                                   {OffloadModule::expert_fc1, "expert_fc1"},
                                                                   {OffloadModule::moe_act, "moe_act"}}}};
constexpr std::string_view name_of(OffloadModule value) { return kOffloadModuleNames.name(value); }

using OffloadModules = EnumSet<OffloadModule>;

// Megatron-Core's min_offloaded_tensor_size default (transformer_config.py): a saved tensor of
// fewer elements stays on the GPU.
inline constexpr double kMinOffloadedElements = 1024.0 * 1024.0;

}  // namespace moesim
