// Where a rank sits (PP outermost, then DP, EP-MP innermost: EP8 fills one NVL8 node) and which
// parameter tensors it holds, with each tensor's replica group.
#pragma once

#include <cstdint>
#include <vector>

#include "models/arch/inventory.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct RankCoords {
  std::int64_t stage = 0;  // PP stage
  std::int64_t dp = 0;     // index inside the DP group
  std::int64_t ep_mp = 0;  // expert shard held (index inside the EP-MP group)
  std::int64_t ep_dp = 0;  // replica index of that expert shard (EP-DP group)
};

RankCoords coords_of(const ParallelPlan& plan, std::int64_t rank);

struct LocalTensor {
  const TensorInfo* tensor = nullptr;
  double local_numel = 0;           // elements this rank holds as a compute weight
  std::int64_t replica_group = 1;   // ranks holding identical copies (DP, or EP-DP for experts)
};

// The tensors of one PP stage as one rank of that stage holds them under `plan`.
std::vector<LocalTensor> stage_tensors(const Inventory& inv, const Architecture& arch,
                                       const ParallelPlan& plan, std::int64_t stage);

}  // namespace moesim
