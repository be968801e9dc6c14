// The terms execution working memory is made of, shared by the ledger's phase sets
// (working_memory.cpp) and the allocator replay's allocation order (sim/allocation_order.cpp), so
// the two count the same tensors.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/memory/activations.hpp"
#include "models/memory/ledger.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

struct StageView {
  std::vector<LayerPlace> places;                // every layer's place (layer_places)
  std::vector<std::int64_t> layers;              // block indices of this stage
  bool has_head = false;                         // runs final norm + LM head + loss
  std::map<std::int64_t, double> unit_numel;     // FSDP unit (layer index) -> numel gathered on this rank
  std::map<std::int64_t, double> largest_local;  // layer -> largest local tensor numel
};
StageView view_of(const Architecture& a, const ParallelPlan& plan, const std::vector<LocalTensor>& tensors,
                  std::int64_t stage);
double max_value(const std::map<std::int64_t, double>& m);

// The routed rows of the stage's MoE layers under the plan's routing model (1 without MoE).
RoutedRows stage_routed_rows(const Architecture& a, const ParallelPlan& plan, const StageView& v);

LedgerItem ep_transient_staging(const Architecture& a, const ParallelPlan& plan, double T, const RoutedRows& routed,
                                bool any_moe);
std::vector<LedgerItem> ep_static_buffers(const Architecture& a, const ParallelPlan& plan, double T, double moe_blocks,
                                          const RoutedRows& routed);
LedgerItem quantized_operands(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                              const RoutedRows& routed, bool backward);
// Its bytes alone (no item, no text): what the allocation replay asks of every layer.
double widest_quantized_operands(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                                 const RoutedRows& routed, bool backward);
LedgerItem optimizer_temporaries(const OptimizerSpec& o, double shard);
// Context parallelism's buffers around layer `l`'s attention core in its forward or backward
// (context_parallel_buffers.cpp); none without CP or for a layer without attention.
LedgerItem context_parallel_buffers(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                                    bool backward);

// The update's working buffers: the largest optimizer shard (sizes the temporaries) and the
// distributed optimizer's rebuild buffers, a pack and a gather buffer per replica group.
struct UpdateBuffers {
  double shard = 0;                              // elements
  std::vector<std::pair<double, double>> packs;  // per replica group: (pack bytes, gather bytes)
  double rebuild_bytes() const;
};

// The phase sets of working_memory (ledger.hpp) from the stage's view, routed rows and update
// buffers (update_buffers of the tensors) the caller already has.
std::vector<PhaseSet> working_memory(const Architecture& a, const ParallelPlan& plan, const StageView& v,
                                     const RoutedRows& routed, const UpdateBuffers& update,
                                     const std::vector<std::int64_t>& held_chunks);

UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors);
// The pieces designs build theirs from: every local parameter over `divisor` ranks with no
// rebuild (FSDP: the shard group; naive DDP: 1), or the distributed optimizer's layout per replica
// group with its pack and gather buffers.
UpdateBuffers whole_update(const std::vector<LocalTensor>& tensors, double divisor);
UpdateBuffers sharded_update(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors);

}  // namespace moesim
