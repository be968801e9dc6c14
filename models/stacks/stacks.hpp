// The registered training stacks, one file each (models/stacks/*.cpp).
#pragma once

#include <memory>

#include "models/stacks/stack_preset.hpp"

namespace moesim {

std::unique_ptr<StackPreset> olmo_core_stack();
std::unique_ptr<StackPreset> megatron_core_stack();
std::unique_ptr<StackPreset> megatron_bridge_stack();
std::unique_ptr<StackPreset> megatron_bridge_perf_stack();
std::unique_ptr<StackPreset> torchtitan_stack();
std::unique_ptr<StackPreset> composer_stack();

}  // namespace moesim
