// Measured routing: per-layer expert-load histograms, as users export them from a real run's
// router statistics, given inline in `plan.routing.expert_loads` or in a file
// (`plan.routing.expert_loads_file`, relative to the file that names it):
//   JSON  {"layers": [{"layer": 3, "tokens_per_expert": [...], "capacity_factor": 1.25}, ...]}
//         (the same entries as the inline array; an entry without "layer" serves every MoE layer
//         that has none of its own; "capacity_factor" caps that layer, dropping the rest);
//   CSV   a header `layer,expert,tokens`, then one row per (layer, expert); layer `*` is the
//         default entry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/moe/routing.hpp"

namespace moesim {

class JsonReader;

// Reads `routing`'s expert_loads or expert_loads_file into spec (exactly one must be there).
// Throws InputError naming the file, the path or CSV line, and what is allowed.
void parse_measured_loads(const JsonReader& routing, RoutingSpec& spec);

// Checks the histograms against the model: one count per routed expert, counts >= 0 with a
// positive sum, entries only for MoE layers, and a histogram for every MoE layer. `fail(path,
// message)` throws.
void check_measured_loads(const RoutingSpec& spec, std::int64_t experts, const std::vector<std::int64_t>& moe_layers,
                          const std::function<void(const std::string&, const std::string&)>& fail);

}  // namespace moesim
