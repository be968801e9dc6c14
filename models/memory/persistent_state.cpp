#include "models/memory/persistent_state.hpp"

#include <cmath>
#include <map>

#include "models/costs/low_precision.hpp"
#include "models/memory/ledger.hpp"
#include "models/memory/optimizer_layouts.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

// FSDP2 shards a tensor on dim 0 into ceil(dim0 / F) rows per rank (padded). A routed expert's
// local tensor (its E / EP experts stacked on dim 0) is sharded over the experts' shard group;
// torchtitan shards it on dim 1 instead when that group x EP exceeds the experts, so that no rank
// holds padding rows of whole experts (torchtitan/distributed/fsdp.py apply_fsdp_to_decoder).
double fsdp_shard_numel(const LocalTensor& lt, const ParallelPlan& plan) {
  const TensorInfo& t = *lt.tensor;
  const double rows = static_cast<double>(t.shape.front());
  if (t.cls != TensorClass::routed_expert) {
    const double group = static_cast<double>(plan.shard_group());
    return std::ceil(rows / group) * static_cast<double>(t.numel) / rows * lt.tp_share;
  }
  const double group = static_cast<double>(plan.expert_shard_group());
  const double local_rows = rows / static_cast<double>(plan.ep);
  if (group * static_cast<double>(plan.ep) <= rows || t.shape.size() < 2)
    return std::ceil(local_rows / group) * lt.local_numel / local_rows;
  const double cols = static_cast<double>(t.shape[1]);
  return std::ceil(cols / group) * lt.local_numel / cols;
}

}  // namespace

std::vector<LedgerItem> fsdp_sharded_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                           OptimizerShardReport& report) {
  const auto& opt = plan.optimizer;
  const double main_b = bytes_of(opt.main_weight_dtype);
  const double state_b = bytes_of(opt.state_dtype) * opt.states();
  std::vector<LedgerItem> items;
  report = {};
  report.layout = std::string(name_of(opt.layout));
  // FSDP2 mixed precision: sharded FP32 parameters (the main weights), sharded gradients in the
  // same dtype, sharded optimizer states; BF16 compute weights exist only while gathered.
  const std::int64_t f = plan.shard_group(), fe = plan.expert_shard_group();
  double shard = 0;
  for (const auto& lt : tensors) shard += fsdp_shard_numel(lt, plan);
  items.push_back({"sharded main weights", MemClass::main_weights, shard * main_b,
                   "ceil(dim0/F) rows per tensor x " + std::to_string(int(main_b)) + " B, F=" + std::to_string(f) +
                       (fe != f ? ", experts over " + std::to_string(fe) : "")});
  items.push_back({"sharded gradients", MemClass::grad_buffers, shard * main_b, "same shard, param dtype"});
  items.push_back({"sharded optimizer states", MemClass::optimizer_states, shard * state_b,
                   std::to_string(opt.states()) + " state(s) x " + std::string(name_of(opt.state_dtype))});
  report.largest_bytes = report.even_share_bytes = shard * (main_b + state_b);
  report.sharded_tensors = static_cast<std::int64_t>(tensors.size());
  return items;
}

void add_compute_weights(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                         std::vector<LedgerItem>& items) {
  double local = 0;
  for (const auto& lt : tensors) local += lt.local_numel;
  items.push_back({"compute weights", MemClass::compute_weights, local * bytes_of(plan.precision.compute),
                   "rank-local params x " + std::string(name_of(plan.precision.compute))});
  const CachedWeights caches = cached_weights(tensors, plan);
  if (caches.elements > 0) {
    items.push_back({"low-precision weight caches", MemClass::compute_weights, caches.bytes,
                     "forward + dgrad orientations of " + std::to_string(static_cast<long long>(caches.elements)) +
                         " cached params (seed 4.4.3)"});
  }
}

void add_gradient_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                          std::vector<LedgerItem>& items) {
  double local = 0;
  for (const auto& lt : tensors) local += lt.local_numel;
  items.push_back({"gradient buckets", MemClass::grad_buffers, local * bytes_of(plan.precision.grad_accum),
                   "rank-local params x " + std::string(name_of(plan.precision.grad_accum)) + " (flat bucket views)"});
}

double add_optimizer_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan, bool sharded,
                           std::vector<LedgerItem>& items, OptimizerShardReport& report) {
  const auto& opt = plan.optimizer;
  const double main_b = bytes_of(opt.main_weight_dtype);
  const double state_b = bytes_of(opt.state_dtype) * opt.states();
  const double optim_b = main_b + state_b;
  report = {};
  report.layout = std::string(name_of(opt.layout));
  // Main weights and optimizer states: one layout per replica group (dense: DP; experts: EP-DP).
  double main_elems = 0;
  if (sharded) {
    std::map<std::int64_t, std::vector<double>> groups;
    for (const auto& lt : tensors) groups[lt.replica_group].push_back(lt.local_numel);
    const auto& layout = optimizer_layouts().get(name_of(opt.layout));
    for (const auto& [group, numels] : groups) {
      const LayoutResult r = layout.assign(numels, group, opt.min_shard_numel);
      main_elems += r.largest;
      report.even_share_bytes += r.even_share * optim_b;
      report.replicated_tensors += r.replicated_tensors;
      report.sharded_tensors += r.cut_tensors;
    }
    report.largest_bytes = main_elems * optim_b;
  } else {
    for (const auto& lt : tensors) main_elems += lt.local_numel;
    report.largest_bytes = report.even_share_bytes = main_elems * optim_b;
    report.replicated_tensors = static_cast<std::int64_t>(tensors.size());
  }
  const std::string where = sharded ? "largest rank's shard (" + report.layout + ")" : "replicated";
  items.push_back({"main weights", MemClass::main_weights, main_elems * main_b,
                   where + " x " + std::string(name_of(opt.main_weight_dtype))});
  items.push_back({"optimizer states", MemClass::optimizer_states, main_elems * state_b,
                   where + " x " + std::to_string(opt.states()) + " x " + std::string(name_of(opt.state_dtype))});
  return main_elems;
}

void add_gradient_partition(double elements, const ParallelPlan& plan, std::vector<LedgerItem>& items) {
  items.push_back(
      {"gradient partition", MemClass::grad_buffers, elements * bytes_of(plan.precision.grad_accum),
       "the rank's shard of the gradients (as the optimizer's) x " + std::string(name_of(plan.precision.grad_accum))});
}

std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                         OptimizerShardReport& report) {
  return design_of(plan).persistent_state(tensors, plan, report);
}

}  // namespace moesim
