// Builds the task DAG of one optimizer step for a scenario: the pipeline schedule per stage,
// every block's forward and backward per microbatch (the shared expert on a side stream), and
// three composable pieces: the design's parameter-sync strategy (sim/schedules/, one file per
// design), expert parallelism's dispatch and combine, and pipeline transfers between stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/arch/inventory.hpp"
#include "models/costs/cost_book.hpp"
#include "models/moe/routing.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/task_graph.hpp"

namespace moesim {

struct SimOptions {
  // Simulate every rank of the world instead of one rank per distinct role (stage x expert
  // shard when routing is uneven, else stage). For tests of the symmetry reduction.
  bool all_ranks = false;
};

struct SimRank : RankCoords {
  double represents = 1;  // real ranks this simulated rank stands for
};

// A pass's activations are held from its first compute-stream kernel (forward) to its last
// compute kernel (backward).
struct OpSpan {
  std::uint32_t rank = 0;
  PipeOp op;
  TaskId first = kNoTask;  // the pass's first kernel on the compute stream
  TaskId last = kNoTask;   // its last compute kernel (forward: its send, when it has one)
};

// One MoE layer under skewed routing (random, zipf, measured): the most-loaded EP-MP rank's routed
// rows over the even share (it sets the layer's pace) and the share of rows the cap dropped.
struct LayerRouting {
  std::int64_t layer = 0;
  double imbalance = 1;
  double dropped_fraction = 0;
};

struct BuiltStep {
  TaskGraph graph{0};
  std::vector<SimRank> ranks;
  std::vector<OpSpan> ops;
  std::int64_t microbatches = 0;
  double dropped_fraction = 0;        // routed rows dropped by the capacity cap, over the whole step
  std::vector<LayerRouting> routing;  // by layer; empty under uniform routing
  std::string rerun;                  // why the step runs twice (SyncFreeRerun::why; "" when it does not)
};

// Ranks simulated for each pipeline stage: ranks of one stage are identical unless routing loads
// expert shards unevenly; then one per expert shard (EP-MP index). All of them with all_ranks.
std::int64_t simulated_ranks_per_stage(const Architecture& arch, const ParallelPlan& plan, const SimOptions& options);

// The routing of one layer for a rank microbatch of `tokens`: the tokens of the whole EP-MP
// group are routed together (one draw per layer).
ExpertLoad layer_expert_load(const Architecture& arch, const ParallelPlan& plan, double tokens, std::int64_t layer);

// Routed rows per local expert of that layer on the rank at EP-MP index `ep_mp` (the rank serves
// one shard of the experts). `routed`/`dropped`: the group's totals.
struct ShardRows {
  std::vector<double> rows;
  double routed = 0;
  double dropped = 0;
  // The rank's rows over an even share of the group's (1 when nothing is routed).
  double share(std::int64_t ep) const {
    double own = 0;
    for (const double r : rows) own += r;
    return routed > 0 ? own * static_cast<double>(ep) / routed : 1.0;
  }
};
ShardRows shard_expert_rows(const ExpertLoad& load, const Architecture& arch, const ParallelPlan& plan,
                            std::int64_t ep_mp);

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options);
// The same, written into `recycled`'s buffers (a previous step's, emptied first): a sweep thread or a
// repeated benchmark builds step after step in the same memory.
BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options, BuiltStep&& recycled);

}  // namespace moesim
