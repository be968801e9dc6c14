// Model FLOPs per trained token (forward + backward) under a named counting convention.
// Conventions differ in how attention is counted and which weights count; every reported MFU
// names the convention it used.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/arch/inventory.hpp"
#include "models/common/registry.hpp"

namespace moesim {

struct FlopsPerToken {
  std::string convention;
  double total = 0;
  double attention_projections = 0;  // q, k, v, out GEMMs
  double attention_scores = 0;       // QK^T and PV
  double dense_mlp = 0;
  double router = 0;
  double experts = 0;         // routed (K active) + shared experts
  double routed_experts = 0;  // the routed part of `experts` (what a dropped token skips)
  double lm_head = 0;
};

class FlopConvention : public Registered {
 public:
  using Registered::Registered;
  virtual std::string_view source() const = 0;
  virtual FlopsPerToken per_token(const Architecture& arch, const Inventory& inv) const = 0;
};

const Registry<FlopConvention>& flop_conventions();
inline constexpr std::string_view kDefaultFlopConvention = "olmo-core";

}  // namespace moesim
