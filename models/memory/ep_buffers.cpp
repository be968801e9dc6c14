// The EP transports' buffers (cost_types.hpp EpTransport): the staging of the layer whose
// dispatch or combine runs, and the buffers a transport keeps for the run. Shared by the ledger's
// phase sets (working_memory.cpp) and the allocation replay (sim/allocation_order.cpp).
#include <algorithm>
#include <string>

#include "models/common/json_reader.hpp"
#include "models/common/units.hpp"
#include "models/memory/working_terms.hpp"

namespace moesim {

// All-to-all staging of the layer that runs (NCCL, and DeepEP, whose dispatch returns the received
// rows as new tensors): the permuted send rows (all K x T local routes) and the received rows,
// alive together while the exchange runs. DeepEP's own communication buffer, one region for all
// layers sized by its config, is not counted.
// The all-gather dispatcher (Megatron-Core MoEAllGatherTokenDispatcher) gathers into its global
// buffer (below) and stages the combine instead: the unpermuted [EP x T, d] outputs the
// reduce-scatter reads, beside the rank's routed rows (the combine's gradient likewise gathers
// [EP x T, d] before permuting out the rows).
LedgerItem ep_transient_staging(const Architecture& a, const ParallelPlan& plan, double T, const RoutedRows& routed,
                                bool any_moe) {
  if (plan.ep == 1 || !any_moe || plan.ep_transport == EpTransport::symmetric_memory) return {};
  const double e = bytes_of(plan.precision.compute), d = dbl(a.d_model);
  T *= plan.sequence_share();  // an MoE block under TP routes the rank's sequence share
  if (plan.ep_transport == EpTransport::nccl_all_gather) {
    return {"EP all-gather combine staging", MemClass::ep_comm_buffers, (dbl(plan.ep) * T + routed.computed) * e * d,
            "unpermuted EP x T rows + the rank's routed rows, x d x compute dtype"};
  }
  return {"EP all-to-all staging", MemClass::ep_comm_buffers, T * (dbl(a.moe->top_k) + routed.working) * e * d,
          "send K x T rows + receive the rank's routed rows, x d x compute dtype"};
}

// Symmetric-memory EP buffers each MoE block keeps for the run (Olmo-core rowwise path,
// ep_no_sync_buffers.py): the capacity-sized combine input, and, when the EP group spans more
// GPUs than one node (its auto rule: EP > max(local GPUs, 8)), the symmetric dispatch input and
// combine gather of K x T rows. The dispatched input is leased per pass and counted with the
// saved activations.
//
// The all-gather dispatcher gathers the tokens into Megatron-Core's global memory buffer
// (gather_from_sequence_parallel_region with use_global_buffer: utils.py GlobalMemoryBuffer keeps
// one tensor per name and dtype, regrown on demand and never freed): EP x T rows for the run.
std::vector<LedgerItem> ep_static_buffers(const Architecture& a, const ParallelPlan& plan, double T, double moe_blocks,
                                          const RoutedRows& routed) {
  if (plan.ep > 1 && moe_blocks > 0 && plan.ep_transport == EpTransport::nccl_all_gather) {
    const double rows = dbl(plan.ep) * T * plan.sequence_share();
    return {{"EP all-gather global buffer", MemClass::ep_comm_buffers,
             rows * bytes_of(plan.precision.compute) * dbl(a.d_model),
             "EP x T gathered rows x d x compute dtype, one buffer for every MoE block"}};
  }
  if (plan.ep == 1 || moe_blocks == 0 || plan.ep_transport != EpTransport::symmetric_memory) return {};
  constexpr std::int64_t kOlmoIntraNodeFloor = 8;  // _rowwise_symm_auto_enabled's minimum node size
  const double e = bytes_of(plan.precision.compute), d = dbl(a.d_model);
  T *= plan.sequence_share();  // an MoE block under TP routes the rank's sequence share
  const double blocks = plan.ep_buffers_shared ? 1.0 : moe_blocks;
  const std::string per =
      plan.ep_buffers_shared ? "one shared slot" : std::to_string(int(moe_blocks)) + " MoE block(s)";
  std::vector<LedgerItem> out;
  out.push_back({"EP symmetric combine buffers", MemClass::ep_comm_buffers, blocks * T * routed.dispatch * e * d,
                 per + " x capacity (" + brief(plan.ep_buffer_capacity_factor) + " x K x T rows) x d"});
  if (plan.ep > std::max(plan.gpus_per_node, kOlmoIntraNodeFloor)) {
    out.push_back({"EP symmetric dispatch-in and combine-gather buffers", MemClass::ep_comm_buffers,
                   blocks * 2 * T * dbl(a.moe->top_k) * e * d, per + " x 2 x K x T rows x d (EP spans nodes)"});
  }
  return out;
}

}  // namespace moesim
