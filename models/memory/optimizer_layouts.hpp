// Distributed-optimizer layouts (seed Figure 10): how FP32 main weights and optimizer states of
// one replica group of D ranks are divided. Each layout is a registered implementation.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/common/registry.hpp"

namespace moesim {

struct LayoutResult {
  std::vector<double> per_rank;  // elements held by each of the D ranks
  double largest = 0;
  double even_share = 0;  // total / D
  std::int64_t replicated_tensors = 0;
  std::int64_t cut_tensors = 0;   // tensors whose elements live on more than one rank
  double sharded_on_largest = 0;  // elements of the largest rank that other ranks must gather
};

class OptimizerShardLayout : public Registered {
 public:
  using Registered::Registered;
  // `numels` in parameter order; `min_numel`: smaller tensors are never sharded.
  virtual LayoutResult assign(const std::vector<double>& numels, std::int64_t group, std::int64_t min_numel) const = 0;
};

const Registry<OptimizerShardLayout>& optimizer_layouts();

}  // namespace moesim
