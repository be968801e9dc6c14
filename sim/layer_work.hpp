// Kernel times of one microbatch through each part of a block on one rank, from the cost book.
// Computed once per (layer kind, rank load) and reused for every microbatch.
#pragma once

#include <cstdint>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/plan/parallel_plan.hpp"
#include "sim/cost_book.hpp"

namespace moesim {

struct Pass {  // one direction through a part: compute-stream time
  double fwd = 0;
  double bwd = 0;
};

struct LayerWork {
  bool moe = false;
  Pass pre;      // attention block (+ dense MLP, or + norm/router/permute before dispatch)
  Pass experts;  // routed-expert grouped GEMMs on this rank's rows
  Pass post;     // unpermute / combine weighting / residual
  Pass shared;   // shared experts (side stream)
  double a2a_bytes = 0;   // all_to_all send buffer per rank for dispatch (= combine)
  double selective_recompute = 0;  // SwiGLU products recomputed in backward (selective)
  double local_params = 0;
};

struct EdgeWork {  // embedding (first stage) and final norm + LM head + loss (last stage)
  Pass embed;
  Pass head;
  double embed_params = 0;
  double head_params = 0;
};

// `rank_rows`: routed rows per local expert on this rank for this layer (empty for dense).
LayerWork layer_work(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, std::int64_t layer,
                     double tokens, const std::vector<double>& rank_rows, double local_params);

EdgeWork edge_work(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, double tokens);

}  // namespace moesim
