// Execution working memory by phase (seed Table 5): activations of in-flight microbatches, loss
// buffers, transient gradients, FSDP materialized units, EP buffers, optimizer-step transients.
#include <algorithm>
#include <map>

#include "models/common/units.hpp"
#include "models/memory/activations.hpp"
#include "models/memory/ledger.hpp"
#include "models/memory/optimizer_layouts.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

struct StageView {
  std::vector<std::int64_t> layers;              // block indices of this stage
  bool has_head = false;                         // runs final norm + LM head + loss
  std::map<std::int64_t, double> unit_numel;     // FSDP unit (layer index) -> full numel
  std::map<std::int64_t, double> largest_local;  // layer -> largest local tensor numel
};

StageView view_of(const Architecture& a, const ParallelPlan& plan, const std::vector<LocalTensor>& tensors,
                  std::int64_t stage) {
  StageView v;
  for (std::int64_t l = 0; l < a.num_layers; ++l) {
    if (place_of_layer(plan, a, l).stage == stage) v.layers.push_back(l);
  }
  v.has_head = stage == plan.pp - 1;
  for (const auto& lt : tensors) {
    v.unit_numel[lt.tensor->layer] += dbl(lt.tensor->numel);
    auto& big = v.largest_local[lt.tensor->layer];
    big = std::max(big, lt.local_numel);
  }
  return v;
}

double max_value(const std::map<std::int64_t, double>& m) {
  double out = 0;
  for (const auto& [k, x] : m) out = std::max(out, x);
  return out;
}

}  // namespace

double PhaseSet::bytes() const {
  double sum = 0;
  for (const auto& i : items) sum += i.bytes;
  return sum;
}

std::vector<PhaseSet> working_memory(const Architecture& a, const ParallelPlan& plan,
                                     const std::vector<LocalTensor>& tensors, std::int64_t stage,
                                     std::int64_t in_flight) {
  const StageView v = view_of(a, plan, tensors, stage);
  const double T = dbl(plan.microbatch_sequences * a.sequence_length);
  const double e = bytes_of(plan.precision.compute);
  const bool full_recompute = plan.recompute == Recompute::full;
  const bool fsdp = plan.design == Design::fsdp;

  // Saved activations of one microbatch: per layer (recompute "full" keeps only block inputs).
  std::vector<double> saved;
  double saved_all = 0;
  for (auto l : v.layers) {
    const double b = full_recompute ? e * dbl(a.d_model) : saved_per_token(a, l, plan).total();
    saved.push_back(T * b);
    saved_all += T * b;
  }
  const LossBuffers loss = loss_per_token(a, plan);
  const double fsdp_unit = fsdp ? max_value(v.unit_numel) : 0.0;
  const double materialized = dbl(1 + plan.fsdp_prefetch) * fsdp_unit * e;
  const bool any_moe = std::any_of(v.layers.begin(), v.layers.end(), [&](auto l) { return a.is_moe_layer(l); });
  const double ep_buffers =
      (plan.ep > 1 && any_moe) ? 2 * plan.routing.capacity_factor * dbl(a.moe->top_k) * T * e * dbl(a.d_model) : 0.0;
  const std::string mb =
      std::to_string(in_flight) + " microbatch(es) x " + std::to_string(static_cast<long long>(T)) + " tokens";

  std::vector<PhaseSet> phases;
  {
    PhaseSet f{Phase::forward, {}};
    f.items.push_back({"saved activations", MemClass::activations, dbl(in_flight) * saved_all, mb});
    if (v.has_head)
      f.items.push_back({"logits and loss", MemClass::logits_loss, T * loss.forward, "T x per-token loss buffers"});
    if (fsdp)
      f.items.push_back({"gathered units (current + prefetch)", MemClass::fsdp_materialized, materialized,
                         "(1 + prefetch) x largest unit x compute dtype"});
    if (ep_buffers > 0)
      f.items.push_back(
          {"EP all-to-all staging", MemClass::ep_comm_buffers, ep_buffers, "send + receive rows: 2 x cf x K x T x d"});
    phases.push_back(std::move(f));
  }
  {
    // Walk the backward pass layer by layer and keep the worst moment.
    PhaseSet best{Phase::backward, {}};
    auto consider = [&](PhaseSet candidate) {
      if (candidate.bytes() > best.bytes()) best = std::move(candidate);
    };
    const double older = dbl(in_flight - 1) * saved_all;
    if (v.has_head) {
      PhaseSet p{Phase::backward, {}};
      p.items.push_back({"saved activations", MemClass::activations, older + saved_all, mb + " (LM head backward)"});
      p.items.push_back({"logits, loss and logits gradient", MemClass::logits_loss, T * loss.backward,
                         "T x per-token loss backward buffers"});
      p.items.push_back({"LM head weight gradient", MemClass::weight_grad_transient,
                         v.largest_local.count(a.num_layers) ? v.largest_local.at(a.num_layers) * e : 0.0,
                         "one tensor in compute dtype"});
      consider(std::move(p));
    }
    double still_saved = saved_all;
    for (std::size_t i = v.layers.size(); i-- > 0;) {
      const std::int64_t l = v.layers[i];
      PhaseSet p{Phase::backward, {}};
      p.items.push_back({"saved activations", MemClass::activations, older + still_saved,
                         mb + " (backward of layer " + std::to_string(l) + ")"});
      double grads = T * backward_working_per_token(a, l, plan);
      if (full_recompute) grads += T * saved_per_token(a, l, plan).total();
      p.items.push_back(
          {"activation gradients", MemClass::activation_grads, grads,
           "residual grad in/out + widest internal grad" + std::string(full_recompute ? " + recomputed block" : "")});
      if (fsdp) {
        const double unit = v.unit_numel.count(l) ? v.unit_numel.at(l) : 0.0;
        p.items.push_back({"gathered units (current + prefetch)", MemClass::fsdp_materialized, materialized,
                           "(1 + prefetch) x largest unit x compute dtype"});
        p.items.push_back({"unsharded unit gradients", MemClass::fsdp_grad_unsharded,
                           unit * (e + bytes_of(plan.precision.reduce)),
                           "unit grads in compute dtype + reduce-scatter input in reduce dtype"});
      } else {
        p.items.push_back({"weight gradient (one tensor)", MemClass::weight_grad_transient,
                           (v.largest_local.count(l) ? v.largest_local.at(l) : 0.0) * e,
                           "largest local tensor of the layer in compute dtype, added to its FP32 bucket then freed"});
      }
      if (ep_buffers > 0 && a.is_moe_layer(l))
        p.items.push_back({"EP all-to-all staging", MemClass::ep_comm_buffers, ep_buffers,
                           "send + receive rows: 2 x cf x K x T x d"});
      consider(std::move(p));
      still_saved -= saved[i];
    }
    phases.push_back(std::move(best));
  }
  // Gradient reduction runs in place on the FP32 buckets (DDP) or on the reduce-scatter output.
  phases.push_back({Phase::grad_sync,
                    {{"in-place bucket collectives", MemClass::optimizer_transients, 0.0,
                      "NCCL reduces the flat buckets in place"}}});

  double local = 0, shard = 0;
  for (const auto& lt : tensors) local += lt.local_numel;
  std::map<std::int64_t, std::vector<double>> groups;
  for (const auto& lt : tensors) groups[lt.replica_group].push_back(lt.local_numel);
  if (fsdp) {
    shard = local / dbl(plan.shard_group());
  } else if (plan.distributed_optimizer) {
    for (const auto& [g, numels] : groups)
      shard += optimizer_layouts()
                   .get(name_of(plan.optimizer.layout))
                   .assign(numels, g, plan.optimizer.min_shard_numel)
                   .largest;
  } else {
    shard = local;
  }
  {
    // Olmo-core's foreach AdamW keeps about three FP32 temporaries of a chunk alive (grad^2,
    // denominator, update); chunks are capped at foreach_chunk_numel elements.
    const double temps = plan.optimizer.kind == OptimizerKind::sgd ? 1.0 : 3.0;
    const double chunk = std::min(shard, dbl(plan.optimizer.foreach_chunk_numel));
    phases.push_back(
        {Phase::optimizer_step,
         {{"foreach update temporaries", MemClass::optimizer_transients, temps * chunk * bytes_of(DType::fp32),
           std::to_string(int(temps)) + " x min(shard, chunk) x fp32"}}});
  }
  if (!fsdp && plan.distributed_optimizer) {
    // Weight reconstruction: per replica group, a pack buffer of the local shard and a gather
    // buffer of W x shard in compute dtype; both groups' buffers can be alive together.
    double rebuild = 0;
    for (const auto& [g, numels] : groups) {
      const LayoutResult r =
          optimizer_layouts().get(name_of(plan.optimizer.layout)).assign(numels, g, plan.optimizer.min_shard_numel);
      if (g > 1) rebuild += (1.0 + dbl(g)) * r.sharded_on_largest * e;
    }
    phases.push_back({Phase::weight_rebuild,
                      {{"coalesced all-gather buffers", MemClass::optimizer_transients, rebuild,
                        "(1 + W) x local shard x compute dtype per replica group"}}});
  }
  return phases;
}

}  // namespace moesim
