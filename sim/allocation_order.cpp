#include "sim/allocation_order.hpp"

#include <algorithm>
#include <cmath>

#include "models/common/units.hpp"
#include "models/memory/caching_allocator.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/designs/design.hpp"
#include "sim/allocation_trace.hpp"

namespace moesim {

namespace {

// One layer's tensors for one microbatch, in bytes.
struct LayerBytes {
  std::size_t chunk = 0;
  double saved_attention = 0, saved_mlp = 0;
  double quant_forward = 0, quant_backward = 0, staging = 0;
  double cp_forward = 0, cp_backward = 0;  // context parallelism's buffers around the attention
  double grads = 0, rebuilt = 0, weight_grad = 0;
  double gathered = 0, reduce_input = 0;  // FSDP: the unit's gathered weights, its reduce-scatter input
  double step_grads = 0;                  // FSDP: the unit's sharded gradients, made each step
  double accumulated = 0;                 // FSDP2 under a pipeline: its unsharded gradient accumulator
};

class StageWalk {
 public:
  StageWalk(const StageAllocations& in, std::size_t chunks) : plan_(in.plan), held_(chunks), loss_held_(chunks) {
    const Architecture& a = in.arch;
    const ParallelPlan& plan = in.plan;
    const StageView& v = in.view;
    const RoutedRows& routed = in.routed;
    const double T = dbl(batch_shape(plan, a).microbatch_tokens);
    const double e = bytes_of(plan.precision.compute);
    const DesignEntry& design = design_of(plan);
    keeps_gathered_ = design.keeps_gathered_units();
    accumulates_ = design.accumulates_unsharded(plan);
    bool any_moe = false;
    for (const auto l : v.layers) any_moe = any_moe || a.is_moe_layer(l);
    const double staging = ep_transient_staging(a, plan, T, routed, any_moe).bytes;
    double moe_blocks = 0;
    for (const auto l : v.layers) {
      LayerBytes b;
      b.chunk = std::min(static_cast<std::size_t>(v.places[static_cast<std::size_t>(l + 1)].chunk), chunks - 1);
      const BlockActivations saved = saved_per_token(a, l, plan, routed);
      b.saved_attention = T * saved.attention;
      b.saved_mlp = T * saved.mlp;
      b.quant_forward = widest_quantized_operands(a, plan, l, T, routed, false);
      b.quant_backward = widest_quantized_operands(a, plan, l, T, routed, true);
      b.cp_forward = context_parallel_buffers(a, plan, l, T, false).bytes;
      b.cp_backward = context_parallel_buffers(a, plan, l, T, true).bytes;
      if (a.is_moe_layer(l)) {
        b.staging = staging;
        moe_blocks += 1;
      }
      b.grads = T * backward_working_per_token(a, l, plan, routed);
      b.rebuilt = T * recomputed_per_token(a, l, plan, routed);
      const UnitHold hold = design.unit_hold(plan, v, l);
      b.gathered = hold.gathered;
      b.weight_grad = hold.weight_grad;
      b.reduce_input = hold.reduce_input;
      b.accumulated = hold.accumulated_grad;
      layers_.push_back(b);
      layer_index_.push_back(l);
    }
    gathered_.assign(layers_.size(), kNoAllocation);
    step_grad_ids_.assign(layers_.size(), kNoAllocation);
    accumulator_ids_.assign(layers_.size(), kNoAllocation);
    has_head_ = v.has_head;
    head_chunk_ = static_cast<std::size_t>(std::max<std::int64_t>(v.places.back().chunk, 0));
    loss_ = loss_per_token(a, plan);
    for (auto* steps : {&loss_.forward_steps, &loss_.backward_steps})
      for (auto& st : *steps) st.bytes *= T;
    head_weight_grad_ = (v.largest_local.count(a.num_layers) ? v.largest_local.at(a.num_layers) : 0.0) * e;
    for (const LedgerItem& item : ep_static_buffers(a, plan, T, moe_blocks, routed)) trace_.take(item.bytes);
    const UpdateBuffers& update = in.update;
    optimizer_temporaries_ = optimizer_temporaries(plan.optimizer, update.shard).bytes;
    rebuild_ = plan.optimizer.rebuild == WeightRebuild::in_place ? decltype(update.packs){} : update.packs;
    place_persistent(plan, in.tensors, in.persistent, v);
  }

  // The persistent state the step itself allocates: torch optimizers create their states at the
  // first step (torch/optim/adamw.py _init_group: zeros_like per parameter); FSDP2's sharded
  // gradients are new tensors each step (foreach_reduce), released by zero_grad(set_to_none=True),
  // torch's default. What is allocated before the first step only adds its rounding.
  void place_persistent(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors,
                        const std::vector<LedgerItem>& persistent, const StageView& v) {
    double numel = 0;
    for (const auto& lt : tensors) numel += lt.local_numel;
    const bool torch_optimizer = plan.optimizer.kernels != OptimizerKernels::olmo_core_foreach;
    for (const LedgerItem& item : persistent) {
      if (numel <= 0) break;
      if (item.cls == MemClass::optimizer_states && torch_optimizer && plan.optimizer.states() > 0) {
        const double per = item.bytes / numel / dbl(plan.optimizer.states());
        for (const auto& lt : tensors)
          for (int k = 0; k < plan.optimizer.states(); ++k) lazy_states_.push_back(per * lt.local_numel);
        continue;
      }
      if (item.cls == MemClass::grad_buffers && design_of(plan).gradients_made_each_step()) {
        double unit_total = 0;
        for (const auto& [layer, n] : v.unit_numel) unit_total += n;
        for (std::size_t i = 0; i < layers_.size(); ++i) {
          const double n = v.unit_numel.count(layer_index_[i]) ? v.unit_numel.at(layer_index_[i]) : 0.0;
          layers_[i].step_grads = unit_total > 0 ? item.bytes * n / unit_total : 0.0;
        }
        continue;
      }
      kept_at_start_.push_back(&item);
    }
  }

  void run(const StagePass& p) {
    if (p.forward) {
      forward(p);
    } else {
      backward(p);
    }
  }

  // The rest of the step: every pass still held ends, then the update (the first one creates
  // the lazily made states), the weight rebuild and zero_grad.
  void finish(bool first_step) {
    for (auto& ids : held_.all()) trace_.drop_all(ids);
    for (auto& ids : loss_held_.all()) trace_.drop_all(ids);
    trace_.drop(pending_reduce_);
    if (accumulates_) reduce_accumulated();
    if (first_step)
      for (const double x : lazy_states_) trace_.take(x);
    std::uint32_t t = trace_.take(optimizer_temporaries_);
    trace_.drop(t);
    for (const auto& [pack, gather] : rebuild_) {  // DDP with the distributed optimizer only (update_buffers)
      std::uint32_t p = trace_.take(pack), g = trace_.take(gather);
      trace_.drop(p);
      trace_.drop(g);
    }
    for (auto& id : step_grad_ids_) trace_.drop(id);
  }

  const std::vector<const LedgerItem*>& kept_at_start() const { return kept_at_start_; }

  const AllocationTrace& trace() const { return trace_; }

 private:
  void gather(std::size_t i) {
    if (gathered_[i] == kNoAllocation) gathered_[i] = trace_.take(layers_[i].gathered, AllocStream::gather);
  }
  // FSDP2 under a pipeline, after the last backward (REDUCE_GRAD): unit by unit, the
  // reduce-scatter's input copied from the accumulator, which is freed, the sharded gradient made,
  // the input freed once the collective is done; then the unit is resharded.
  void reduce_accumulated() {
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      std::uint32_t input = trace_.take(layers_[i].reduce_input, AllocStream::reduce);
      trace_.drop(accumulator_ids_[i]);
      if (step_grad_ids_[i] == kNoAllocation)
        step_grad_ids_[i] = trace_.take(layers_[i].step_grads, AllocStream::reduce);
      trace_.drop(input);
      trace_.drop(gathered_[i]);
    }
  }

  // FSDP: the next unit in execution order is gathered ahead (fsdp_prefetch of them).
  void prefetch(std::size_t i, bool forward) {
    std::int64_t left = plan_.fsdp_prefetch;
    for (std::size_t j = i; left > 0;) {
      if (forward ? ++j >= layers_.size() : j-- == 0) break;
      if (layers_[j].chunk != layers_[i].chunk) continue;
      gather(j);
      --left;
    }
  }

  // The loss buffers' steps; `ids` holds every buffer of this microbatch by its number.
  void loss_steps(const std::vector<LossBuffers::Step>& steps, std::vector<std::uint32_t>& ids) {
    for (const auto& st : steps) {
      if (st.frees >= 0 && static_cast<std::size_t>(st.frees) < ids.size()) {
        trace_.drop(ids[static_cast<std::size_t>(st.frees)]);
      } else if (st.frees < 0) {
        ids.push_back(trace_.take(st.bytes));
      }
    }
  }

  void forward(const StagePass& p) {
    auto& saved = held_.of(p.microbatch, p.chunk);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const LayerBytes& b = layers_[i];
      if (b.chunk != static_cast<std::size_t>(p.chunk)) continue;
      gather(i);
      prefetch(i, true);
      std::uint32_t q = trace_.take(b.quant_forward), st = trace_.take(b.staging);
      std::uint32_t cp = trace_.take(b.cp_forward);  // while the attention runs, before its output is saved
      saved.push_back(trace_.take(b.saved_attention));
      trace_.drop(cp);
      saved.push_back(trace_.take(b.saved_mlp));
      trace_.drop(st);
      trace_.drop(q);
      if (!keeps_gathered_) trace_.drop(gathered_[i]);  // else freed after its backward
    }
    if (has_head_ && static_cast<std::size_t>(p.chunk) == head_chunk_)
      loss_steps(loss_.forward_steps, loss_held_.of(p.microbatch, p.chunk));
  }

  void backward(const StagePass& p) {
    if (p.input_grads && has_head_ && static_cast<std::size_t>(p.chunk) == head_chunk_) {
      std::uint32_t w = trace_.take(p.weight_grads ? head_weight_grad_ : 0.0);
      loss_steps(loss_.backward_steps, loss_held_.of(p.microbatch, p.chunk));
      trace_.drop(w);
      trace_.drop_all(loss_held_.of(p.microbatch, p.chunk));
    }
    for (std::size_t i = layers_.size(); i-- > 0;) {
      const LayerBytes& b = layers_[i];
      if (b.chunk != static_cast<std::size_t>(p.chunk)) continue;
      gather(i);
      prefetch(i, false);
      std::uint32_t r = kNoAllocation, g = kNoAllocation, st = kNoAllocation, q = kNoAllocation;
      if (p.input_grads) {
        r = trace_.take(b.rebuilt);
        g = trace_.take(b.grads);
        st = trace_.take(b.staging);
        q = trace_.take(b.quant_backward);
        std::uint32_t cp = trace_.take(b.cp_backward);
        trace_.drop(cp);
      }
      if (p.weight_grads && accumulates_) {
        // Added into the accumulator made by the unit's first backward (FSDPParam
        // to_accumulated_grad_if_needed); no reduction before the chunk's last backward.
        std::uint32_t w = trace_.take(b.weight_grad);
        if (accumulator_ids_[i] == kNoAllocation) accumulator_ids_[i] = trace_.take(b.accumulated);
        trace_.drop(w);
      } else if (p.weight_grads) {
        std::uint32_t w = trace_.take(b.weight_grad);
        // FSDP2's post-backward first waits for the previous unit's reduce-scatter and drops its
        // state (FSDPParamGroup.post_backward, comm_ctx.reduce_scatter_state), then allocates
        // this unit's input, which lives until its own collective is waited for.
        trace_.drop(pending_reduce_);
        pending_reduce_ = trace_.take(b.reduce_input, AllocStream::reduce);
        trace_.drop(w);
        if (step_grad_ids_[i] == kNoAllocation) step_grad_ids_[i] = trace_.take(b.step_grads, AllocStream::reduce);
      }
      trace_.drop(q);
      trace_.drop(st);
      trace_.drop(g);
      trace_.drop(r);
      if (!accumulates_) trace_.drop(gathered_[i]);  // else kept until the step's reduction
    }
    if (p.frees) trace_.drop_all(held_.of(p.microbatch, p.chunk));
  }

  const ParallelPlan& plan_;
  AllocationTrace trace_;
  std::vector<LayerBytes> layers_;
  std::vector<std::int64_t> layer_index_;
  std::vector<std::uint32_t> gathered_, step_grad_ids_, accumulator_ids_;
  std::vector<double> lazy_states_;
  std::vector<const LedgerItem*> kept_at_start_;
  PassAllocations held_, loss_held_;
  std::uint32_t pending_reduce_ = kNoAllocation;
  bool has_head_ = false;
  bool keeps_gathered_ = false;  // a unit gathered for its forward stays until its backward
  bool accumulates_ = false;     // FSDP2 under a pipeline: gathered units and accumulators kept across microbatches
  std::size_t head_chunk_ = 0;
  LossBuffers loss_;
  double head_weight_grad_ = 0, optimizer_temporaries_ = 0;
  std::vector<std::pair<double, double>> rebuild_;
};

// The passes replayed: without a pipeline the first two microbatches (the cache repeats from the
// second on); with one, the order up to two rounds of every chunk's passes past the first moment
// the stage holds the most.
std::vector<StagePass> replayed_passes(const ParallelPlan& plan, const std::vector<std::int64_t>& held,
                                       const std::vector<StagePass>& order) {
  std::vector<StagePass> out;
  if (order.empty()) {
    for (std::size_t c = 0; c < held.size(); ++c)
      for (std::int64_t k = 0; k < held[c]; ++k)
        out.push_back({static_cast<std::int32_t>(k), static_cast<std::int32_t>(c), true, true, true, false});
    for (std::size_t c = held.size(); c-- > 0;)
      for (std::int64_t k = held[c]; k-- > 0;)
        out.push_back({static_cast<std::int32_t>(k), static_cast<std::int32_t>(c), false, true, true, true});
    return out;
  }
  if (plan.pp == 1) {
    for (const StagePass& p : order)
      if (p.microbatch < 2) out.push_back(p);
    return out;
  }
  std::int64_t now = 0, most = -1;
  std::size_t at = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    now += order[i].forward ? 1 : order[i].frees ? -1 : 0;
    if (now > most) {
      most = now;
      at = i;
    }
  }
  const std::size_t rounds = 2 * 3 * std::max<std::size_t>(held.size(), 1);  // F, B and W per chunk, twice
  const std::size_t end = std::min(order.size(), at + 1 + rounds);
  out.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(end));
  return out;
}

double persistent_rounding(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors,
                           const std::vector<const LedgerItem*>& persistent) {
  double numel = 0;
  for (const auto& lt : tensors) numel += lt.local_numel;
  double extra = 0;
  auto kept = [&](double bytes) {
    if (bytes <= 0) return;
    const auto b = static_cast<std::uint64_t>(std::ceil(bytes));
    extra += dbl(static_cast<std::int64_t>(CachingAllocator::footprint_if_kept(b) - b));
  };
  for (const LedgerItem* kept_item : persistent) {
    const LedgerItem& item = *kept_item;
    if (item.cls == MemClass::grad_buffers && design_of(plan).bucketed_gradients()) {
      // Flat buckets of at most the bucket cap each.
      const double n = std::max(1.0, std::ceil(item.bytes / plan.bucket_cap_bytes));
      for (double k = 0; k < n; ++k) kept(item.bytes / n);
      continue;
    }
    if (numel <= 0) continue;
    for (const auto& lt : tensors) kept(item.bytes * lt.local_numel / numel);
  }
  return extra;
}

}  // namespace

AllocatorReplay replay_stage_allocations(const Architecture& a, const ParallelPlan& plan,
                                         const std::vector<LocalTensor>& tensors,
                                         const std::vector<LedgerItem>& persistent, std::int64_t stage,
                                         const std::vector<std::int64_t>& held_chunks,
                                         const std::vector<StagePass>& order, double allocator_limit) {
  const StageView v = view_of(a, plan, tensors, stage);
  const RoutedRows routed = stage_routed_rows(a, plan, v);
  const UpdateBuffers update = update_buffers(plan, tensors);
  return replay_stage_allocations(
      {a, plan, tensors, persistent, v, routed, stage, held_chunks, update, allocator_limit}, order);
}

StageAllocationReplay allocation_replay(std::vector<std::vector<StagePass>> orders) {
  return [orders = std::move(orders)](const StageAllocations& stage) {
    static const std::vector<StagePass> kNoOrder;
    const auto i = static_cast<std::size_t>(stage.stage);
    return replay_stage_allocations(stage, i < orders.size() ? orders[i] : kNoOrder);  // no copy of the order
  };
}

AllocatorReplay replay_stage_allocations(const StageAllocations& in, const std::vector<StagePass>& order) {
  const ParallelPlan& plan = in.plan;
  const std::size_t chunks = std::max<std::size_t>(in.held_chunks.size(), 1);
  const std::vector<StagePass> passes = replayed_passes(plan, in.held_chunks, order);
  StageWalk walk(in, chunks);
  for (int step = 0; step < 2; ++step) {  // the first step makes the lazy state; the second meets it
    for (const StagePass& p : passes) walk.run(p);
    walk.finish(step == 0);
  }
  const std::vector<AllocEvent>& events = walk.trace().events();
  const bool expandable = plan.allocator.expandable_segments;
  auto bytes = [](std::uint64_t x) { return dbl(static_cast<std::int64_t>(x)); };
  const AllocatorOutcome free_run = run_allocator(events, expandable, 0);
  AllocatorReplay r;
  for (const LedgerItem* item : walk.kept_at_start()) r.kept_from_start += item->bytes;
  r.persistent_rounding = persistent_rounding(plan, in.tensors, walk.kept_at_start());
  r.working_allocated = bytes(free_run.peaks.allocated);
  r.working_reserved = r.working_reserved_roomy = bytes(free_run.peaks.reserved);
  r.working_required = bytes(free_run.peaks.required);
  r.events = events.size();
  const double room = in.allocator_limit - r.kept_from_start - r.persistent_rounding;
  if (in.allocator_limit > 0 && r.working_reserved > room) {
    if (room <= 0) {
      r.out_of_memory = true;
      r.working_reserved = r.working_allocated;
      return r;
    }
    // The same record under the limit: the allocator releases cached segments as PyTorch does.
    const AllocatorOutcome capped = run_allocator(events, expandable, static_cast<std::uint64_t>(room));
    r.out_of_memory = capped.failed;
    r.working_reserved = bytes(capped.peaks.reserved);
    r.working_required = capped.failed ? room + bytes(capped.shortfall) : bytes(capped.peaks.required);
    r.events += events.size();
  }
  return r;
}

}  // namespace moesim
