// The plan-space fuzz target's decoder: bytes -> --set overrides on the Figure 8 DDP+EP8
// scenario that pick each knob from a list reaching the extremes users hit (1 GPU to 100,000,
// 1 layer, 1 to 1,024 experts, top-K = N, one-token batches, capacity factors below 1 with
// drops, every design, schedule, optimizer and recompute mode). Missing bytes read as 0.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moesim::fuzz {

std::vector<std::string> plan_space_overrides(std::string_view data);

}  // namespace moesim::fuzz
