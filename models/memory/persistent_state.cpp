// Persistent training state per rank: compute weights, gradient buffers, main weights and
// optimizer states, for Olmo-core DDP (optionally with the distributed optimizer) and FSDP2.
#include <cmath>
#include <map>

#include "models/costs/low_precision.hpp"
#include "models/memory/ledger.hpp"
#include "models/memory/optimizer_layouts.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

// FSDP2 shards every tensor on dim 0 into ceil(dim0 / F) rows per rank (padded).
double fsdp_shard_numel(const TensorInfo& t, std::int64_t group) {
  const double rows = static_cast<double>(t.shape.front());
  const double rest = static_cast<double>(t.numel) / rows;
  return std::ceil(rows / static_cast<double>(group)) * rest;
}

}  // namespace

std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                         OptimizerShardReport& report) {
  const auto& opt = plan.optimizer;
  const double main_b = bytes_of(opt.main_weight_dtype);
  const double state_b = bytes_of(opt.state_dtype) * opt.states();
  const double optim_b = main_b + state_b;
  std::vector<LedgerItem> items;
  report = {};
  report.layout = std::string(name_of(opt.layout));

  if (plan.design == Design::fsdp) {
    // FSDP2 mixed precision: sharded FP32 parameters (the main weights), sharded gradients in the
    // same dtype, sharded optimizer states; BF16 compute weights exist only while gathered.
    const std::int64_t f = plan.shard_group();
    double shard = 0;
    for (const auto& lt : tensors) shard += fsdp_shard_numel(*lt.tensor, f);
    items.push_back({"sharded main weights", MemClass::main_weights, shard * main_b,
                     "ceil(dim0/F) rows per tensor x " + std::to_string(int(main_b)) + " B, F=" + std::to_string(f)});
    items.push_back({"sharded gradients", MemClass::grad_buffers, shard * main_b, "same shard, param dtype"});
    items.push_back({"sharded optimizer states", MemClass::optimizer_states, shard * state_b,
                     std::to_string(opt.states()) + " state(s) x " + std::string(name_of(opt.state_dtype))});
    report.largest_bytes = report.even_share_bytes = shard * optim_b;
    report.sharded_tensors = static_cast<std::int64_t>(tensors.size());
    return items;
  }

  double local = 0;
  for (const auto& lt : tensors) local += lt.local_numel;
  const double compute_b = bytes_of(plan.precision.compute);
  const double grad_b = bytes_of(plan.precision.grad_accum);
  items.push_back({"compute weights", MemClass::compute_weights, local * compute_b,
                   "rank-local params x " + std::string(name_of(plan.precision.compute))});
  const CachedWeights caches = cached_weights(tensors, plan);
  if (caches.elements > 0) {
    items.push_back({"low-precision weight caches", MemClass::compute_weights, caches.bytes,
                     "forward + dgrad orientations of " + std::to_string(static_cast<long long>(caches.elements)) +
                         " cached params (seed 4.4.3)"});
  }
  items.push_back({"gradient buckets", MemClass::grad_buffers, local * grad_b,
                   "rank-local params x " + std::string(name_of(plan.precision.grad_accum)) + " (flat bucket views)"});

  // Main weights and optimizer states: one layout per replica group (dense: DP; experts: EP-DP).
  double main_elems = 0;
  if (plan.distributed_optimizer) {
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
    main_elems = local;
    report.largest_bytes = report.even_share_bytes = local * optim_b;
    report.replicated_tensors = static_cast<std::int64_t>(tensors.size());
  }
  const std::string where = plan.distributed_optimizer ? "largest rank's shard (" + report.layout + ")" : "replicated";
  items.push_back({"main weights", MemClass::main_weights, main_elems * main_b,
                   where + " x " + std::string(name_of(opt.main_weight_dtype))});
  items.push_back({"optimizer states", MemClass::optimizer_states, main_elems * state_b,
                   where + " x " + std::to_string(opt.states()) + " x " + std::string(name_of(opt.state_dtype))});
  return items;
}

}  // namespace moesim
