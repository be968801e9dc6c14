// Short design names used by `compare` and sweep axes: "fsdp", "ddp", "ddp+ep8",
// "ddp+ep8+pp4", "fsdp+hsdp8", "ddp+nodistopt", "ddp+ep8+mxfp8". Each names a set of plan overrides.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

// (plan path, value) pairs; throws InputError (file "design", the spec) on a malformed name.
std::vector<std::pair<std::string, nlohmann::json>> design_overrides(const std::string& spec);

// The (plan path, value) pairs of the low-precision recipe in `format` (bf16, fp8, mxfp8): every
// linear but the LM head and the router. The design parts +bf16 / +fp8 / +mxfp8 apply it.
std::vector<std::pair<std::string, nlohmann::json>> precision_recipe_overrides(const std::string& format);

struct ParallelPlan;
// The short name of a plan in the same notation, e.g. "ddp+ep8+pp4+v2" or "fsdp+hsdp8".
std::string design_name(const ParallelPlan& plan);

}  // namespace moesim
