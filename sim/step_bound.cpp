#include "sim/step_bound.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/costs/layer_work.hpp"
#include "sim/bound_chunks.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/schedules/param_sync.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

namespace {

class BoundBuilder {
 public:
  // `stages`: each stage's tensors, for the strategy's share (none: unit times only).
  BoundBuilder(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs,
               const std::vector<const std::vector<LocalTensor>*>* stages = nullptr)
      : stages_(stages),
        arch_(arch),
        plan_(plan),
        costs_(costs),
        shape_(batch_shape(plan, arch)),
        tokens_(dbl(shape_.microbatch_tokens)),
        work_(arch, plan, costs, tokens_) {}

  StepBound bound() {
    const std::vector<LayerPlace> places = layer_places(plan_, arch_);  // embedding, layers, head
    const auto stages = static_cast<std::size_t>(plan_.pp);
    const std::int64_t shards = expert_shards();
    std::vector<std::vector<PipeOp>> ops(stages);
    for (std::size_t s = 0; s < stages; ++s)
      ops[s] = stage_schedule(plan_, static_cast<std::int64_t>(s), shape_.microbatches);
    // Per stage: the slowest shard's compute-stream work sets the stage's length; the fastest
    // shard's chunks are their share of a chain (which must hold whichever shard it runs through).
    std::vector<double> work(stages, 0.0);
    std::vector<std::vector<ChunkTimes>> fastest(stages);
    // The stage's first backward pass (it waits for microbatch 0's forward through the whole
    // model and its backward back to this chunk), and the slowest shard's compute from it on.
    std::vector<std::size_t> first_backward(stages);
    std::vector<double> from_first_backward(stages, 0.0);
    // The stage's first pass of the last microbatch with gradient hooks (where the final
    // reductions start; a forward fused with it runs beside it, so from that forward on), and the
    // slowest shard's compute before it.
    std::vector<std::size_t> final_from(stages);
    std::vector<double> before_final(stages, 0.0);
    for (std::size_t s = 0; s < stages; ++s) {
      const auto& o = ops[s];
      const auto at = std::find_if(
          o.begin(), o.end(), [&](const PipeOp& op) { return op.frees() && op.microbatch == shape_.microbatches - 1; });
      final_from[s] = static_cast<std::size_t>(at - o.begin());
      if (at != o.begin() && at != o.end() && std::prev(at)->fused_with_next) --final_from[s];
      first_backward[s] = static_cast<std::size_t>(
          std::find_if(o.begin(), o.end(), [](const PipeOp& op) { return !op.forward; }) - o.begin());
    }
    const EdgeWork edge = edge_work(arch_, plan_, costs_, tokens_);
    for (std::int64_t e = 0; e < shards; ++e) {
      std::vector<std::vector<ChunkTimes>> mine(
          stages, std::vector<ChunkTimes>(static_cast<std::size_t>(plan_.model_chunks())));
      const auto add = [&](const LayerPlace& at, const ChunkTimes& t) {
        auto& c = mine[static_cast<std::size_t>(at.stage)][static_cast<std::size_t>(at.chunk)];
        c.fwd += t.fwd;
        c.bwd += t.bwd;
        c.input += t.input;
        c.wgrad += t.wgrad;
      };
      add(places.front(), edge_times(edge.embed, LayerPoint::tp_exit));
      for (std::int64_t l = 0; l < arch_.num_layers; ++l)
        add(places[static_cast<std::size_t>(l + 1)], layer_times(l, e));
      add(places.back(), edge_times(edge.head, LayerPoint::tp_enter));
      for (std::size_t s = 0; s < stages; ++s) {
        double w = 0, before_first_backward = 0;
        for (std::size_t i = 0; i < ops[s].size(); ++i) {
          if (i == final_from[s]) before_final[s] = std::max(before_final[s], w);
          if (i == first_backward[s]) before_first_backward = w;
          w += mine[s][static_cast<std::size_t>(ops[s][i].chunk)].of(ops[s][i]);
        }
        work[s] = std::max(work[s], w);
        if (first_backward[s] < ops[s].size())
          from_first_backward[s] = std::max(from_first_backward[s], w - before_first_backward);
        if (e == 0) {
          fastest[s] = mine[s];
          continue;
        }
        for (std::size_t c = 0; c < mine[s].size(); ++c) {
          ChunkTimes& f = fastest[s][c];
          const ChunkTimes& m = mine[s][c];
          f = {std::min(f.fwd, m.fwd), std::min(f.bwd, m.bwd), std::min(f.input, m.input), std::min(f.wgrad, m.wgrad)};
        }
      }
    }
    const double hop = stages > 1 ? transfer_s() : 0.0;
    const std::vector<std::vector<double>> arrivals = gradient_arrivals(fastest, places, hop, plan_.splits_backward());
    const std::vector<const std::vector<LocalTensor>*> none, &tensors = stages_ != nullptr ? *stages_ : none;
    StepBound out;
    for (std::size_t s = 0; s < stages; ++s) {
      const SyncBounds sync = sync_bounds(s, tensors, ops[s]);
      const ComputeShare& share = sync.compute;
      // The host's share opens every rank's compute stream; stage s's first forward of chunk 0
      // waits for that microbatch's forward through stages 0..s-1, and its last backward of
      // chunk 0 is followed by that microbatch's backward back through them (a W pass last, as in
      // the zero-bubble orders, is followed by nothing).
      const bool opens = !ops[s].empty() && ops[s].front().forward && ops[s].front().chunk == 0;
      const bool closes = !ops[s].empty() && !ops[s].back().forward && ops[s].back().chunk == 0 &&
                          ops[s].back().part != BackwardPart::weight;
      double head = costs_.step_host_s(), tail = 0;
      for (std::size_t t = 0; t < s; ++t) {
        if (opens) head += fastest[t][0].fwd + hop;
        if (closes) tail += fastest[t][0].bwd + hop;
      }
      // The strategy's kernels on the stream: its start-of-step work may run while the first
      // forward waits; the last pass's gradient hooks may run beside the backward crossing back.
      // The first pass's wait overlaps the wait for its input.
      const double first_wait = !ops[s].empty() && ops[s].front().forward && !share.forward_wait.empty()
                                    ? share.forward_wait[static_cast<std::size_t>(ops[s].front().chunk)]
                                    : 0.0;
      double hooks = 0, last = 0, hooks_before_final = 0, hooks_before_backward = 0;
      for (std::size_t i = 0; i < ops[s].size(); ++i) {
        if (i == final_from[s]) hooks_before_final = hooks;
        if (i == first_backward[s]) hooks_before_backward = hooks;
        hooks += share_of(share, ops[s][i]) - (i == 0 ? first_wait : 0.0);
      }
      if (closes && ops[s].back().frees() && !share.gradients.empty()) last = share.gradients[0];
      const double start = std::max(head, costs_.step_host_s() + share.at_start + first_wait);
      double chain = std::max(start + work[s] + hooks + share.in_passes - last + std::max(tail, last),
                              costs_.step_host_s() + sync.serial_s);
      // From its first backward pass (microbatch 0's) on, no sooner than that microbatch's
      // gradient reaches it.
      if (first_backward[s] < ops[s].size() && ops[s][first_backward[s]].microbatch == 0) {
        const double reached =
            costs_.step_host_s() + arrivals[s][static_cast<std::size_t>(ops[s][first_backward[s]].chunk)];
        chain = std::max(
            chain, reached + from_first_backward[s] + hooks - hooks_before_backward - last + std::max(tail, last));
      }
      // The strategy's final reductions and optimizer step follow its last microbatch's first
      // gradient pass, or every pass.
      const FinalSync& fin = sync.final;
      if (fin.after_passes) {
        chain = std::max(chain, start + work[s] + hooks + share.in_passes + fin.s);
      } else if (final_from[s] < ops[s].size()) {
        chain = std::max(chain, start + before_final[s] + hooks_before_final + fin.s);
      }
      if (chain > out.step_s) out = {chain, static_cast<std::int64_t>(s)};
    }
    return out;
  }

  std::vector<double> unit_times() {
    const EdgeWork edge = edge_work(arch_, plan_, costs_, tokens_);
    std::vector<double> out = {edge.embed.fwd + edge.embed.bwd};
    const std::int64_t shards = expert_shards();
    for (std::int64_t l = 0; l < arch_.num_layers; ++l) {
      double slowest = 0;
      for (std::int64_t e = 0; e < shards; ++e) {
        const ChunkTimes t = layer_times(l, e);
        slowest = std::max(slowest, t.fwd + t.bwd);
      }
      out.push_back(slowest);
    }
    out.push_back(edge.head.fwd + edge.head.bwd);
    return out;
  }

 private:
  ChunkTimes layer_times(std::int64_t layer, std::int64_t ep_mp) {
    const bool moe = arch_.is_moe_layer(layer);
    const ShardRows shard = moe ? shard_expert_rows(load_of(layer), arch_, plan_, ep_mp) : ShardRows{};
    const LayerWork& w = work_.get(layer, shard.rows);
    const double recompute = w.partial_recompute;  // what a partial recompute redoes in backward
    // The TP collectives between the parts before the dispatch, and around the shared experts.
    double tp_fwd = 0, tp_bwd = 0, tp_input = 0;
    for (std::size_t i = 0; i < w.pre_points.size(); ++i) {
      const LayerPoint p = w.pre_points[i];
      if (p == LayerPoint::qk_norm_exchange) {  // blocking, both ways (sim/block_parts.cpp)
        const double a2a = collective_s(CollectiveKind::all_to_all, w.qk_norm_bytes, Communicator::tp);
        tp_fwd += a2a;
        tp_bwd += a2a;
        tp_input += a2a;
        continue;
      }
      if (p != LayerPoint::tp_enter && p != LayerPoint::tp_exit) continue;
      tp_fwd += overlapped_tp_s(p, false, w.tp_bytes, w.pre_parts[i], w.pre_parts[i + 1], false);
      tp_bwd += overlapped_tp_s(p, true, w.tp_bytes, w.pre_parts[i], w.pre_parts[i + 1], true);
      tp_input += overlapped_tp_s(p, true, w.tp_bytes, w.pre_parts[i], w.pre_parts[i + 1], false);
    }
    // Context parallelism: a ring's passes beyond the attention they run beside, or the
    // all-to-all variant's exchanges (sim/schedules/context_parallel.hpp); counted with TP's.
    if (plan_.cp > 1) {
      if (plan_.cp_variant == CpVariant::ring) {
        const double steps = dbl(plan_.cp - 1);
        const double pass = collective_s(CollectiveKind::send_recv, w.cp_ring_bytes, Communicator::cp_ring);
        const double pass_bwd = collective_s(CollectiveKind::send_recv, 2 * w.cp_ring_bytes, Communicator::cp_ring);
        tp_fwd += std::max(0.0, steps * pass - w.attention.fwd);
        tp_bwd += std::max(0.0, steps * pass_bwd - w.attention.bwd);
        tp_input += std::max(0.0, steps * pass_bwd - w.attention.bwd);
      } else {
        const double a2a = collective_s(CollectiveKind::all_to_all, w.cp_qkv_bytes, Communicator::cp) +
                           collective_s(CollectiveKind::all_to_all, w.cp_out_bytes, Communicator::cp);
        tp_fwd += a2a;
        tp_bwd += a2a;
        tp_input += a2a;
      }
    }
    const double shared_tp_fwd =
        w.shared_tp ? tp_s(LayerPoint::tp_enter, false, w.tp_bytes) + tp_s(LayerPoint::tp_exit, false, w.tp_bytes)
                    : 0.0;
    const double shared_tp_bwd =
        w.shared_tp ? tp_s(LayerPoint::tp_enter, true, w.tp_bytes) + tp_s(LayerPoint::tp_exit, true, w.tp_bytes) : 0.0;
    ChunkTimes t;
    if (!w.moe) {
      t.fwd = w.pre.fwd + tp_fwd;
      t.bwd = w.pre.bwd + recompute + tp_bwd;
      t.input = w.pre.input_grad() + recompute + tp_input;
    } else {
      // Dispatch + combine (the forward dispatch may send FP8 rows; backward both BF16, the
      // combine's gradient bringing the rows and the dispatch's returning them). Expert TP's
      // gather (with the dispatch) and scatter (with the combine) of the rows. Under the EP
      // all-to-all overlap they may all run beside another block's compute: none counted.
      const bool counted = plan_.ep > 1 && !plan_.ep_a2a_overlap;
      const auto ep = [&](double bytes, bool toward) {  // toward the experts or back from them
        return counted ? costs_.ep_transfer(plan_.ep_transport, ep_transfer_request(arch_, plan_, bytes, toward)).time_s
                       : 0.0;
      };
      const double etp = counted ? etp_s(w.etp_bytes) : 0.0;  // the gather and the scatter
      const double fwd_transfers = ep(w.dispatch_bytes, true) + etp + ep(w.a2a_bytes, false);
      const double bwd_transfers = ep(w.a2a_bytes, true) + ep(w.a2a_bytes, false) + etp;
      const double shared_fwd = w.shared.fwd > 0 ? w.shared.fwd + shared_tp_fwd : 0.0;
      const double shared_bwd = w.shared.bwd > 0 ? w.shared.bwd + shared_tp_bwd : 0.0;
      const double shared_input = w.shared.bwd > 0 ? w.shared.input_grad() + shared_tp_bwd : 0.0;
      t.fwd = w.pre.fwd + tp_fwd + std::max(fwd_transfers + w.experts.fwd, shared_fwd) + w.post.fwd;
      t.bwd = w.post.bwd + std::max(bwd_transfers + w.experts.bwd + recompute, shared_bwd) + w.pre.bwd + tp_bwd;
      t.input = w.post.input_grad() + std::max(bwd_transfers + w.experts.input_grad() + recompute, shared_input) +
                w.pre.input_grad() + tp_input;
    }
    // W as the step builder runs it: every weight gradient of the block in one kernel.
    t.wgrad = w.weight_gradients();
    if (whole_layer_recompute(plan_, arch_, layer)) {  // the forward runs again before backward
      t.bwd += t.fwd;
      t.input += t.fwd;
    }
    return t;
  }

  static ChunkTimes edge_times(const PassTimes& t) { return {t.fwd, t.bwd, t.input_grad(), t.wgrad}; }

  // The embedding's (exit) or the LM head's (enter, and the vocab-parallel loss's three
  // all-reduces) TP collectives added to its times.
  ChunkTimes edge_times(const PassTimes& t, LayerPoint point) const {
    ChunkTimes c = edge_times(t);
    if (plan_.tp == 1) return c;
    const double bytes = tokens_ * dbl(arch_.d_model) * bytes_of(plan_.precision.compute);
    c.fwd += tp_s(point, false, bytes);
    c.bwd += tp_s(point, true, bytes);
    c.input += tp_s(point, true, bytes);
    if (point == LayerPoint::tp_enter) {
      constexpr int kReductions = 3;  // sim/schedules/tensor_parallel.hpp vocab_parallel_loss
      c.fwd +=
          kReductions * collective_s(CollectiveKind::all_reduce, tokens_ * bytes_of(DType::fp32), Communicator::tp);
    }
    return c;
  }

  // What a TP point's collective exposes in one direction: all of it, or under communication
  // overlap what the GEMM part beside it does not cover (sim/block_parts.hpp: an all-gather beside
  // the part that reads it, a reduce-scatter beside the part that writes it; `before` and `after`
  // are the parts around the point in forward order, `whole` the backward's whole or its B part).
  double overlapped_tp_s(LayerPoint point, bool backward, double bytes, const PassTimes& before, const PassTimes& after,
                         bool whole) const {
    const double comm = tp_s(point, backward, bytes);
    if (!plan_.tp_comm_overlap || comm == 0) return comm;
    const TpCollective c = tp_collective(point, backward, plan_.sequence_parallel);
    // Forward an all-gather precedes its reader (after the point), a reduce-scatter follows its
    // writer (before it); backward runs the other way round.
    const bool reader_after = (c.kind == CollectiveKind::all_gather) != backward;
    const PassTimes& beside = reader_after ? after : before;
    const double covered = !backward ? beside.fwd : whole ? beside.bwd : beside.input_grad();
    return std::max(0.0, comm - covered);
  }

  // A TP point's collective in one direction (zero where it has none, or without TP).
  double tp_s(LayerPoint point, bool backward, double bytes) const {
    if (plan_.tp == 1) return 0.0;
    const TpCollective c = tp_collective(point, backward, plan_.sequence_parallel);
    return c.has ? collective_s(c.kind, bytes, Communicator::tp) : 0.0;
  }

  double collective_s(CollectiveKind kind, double bytes, Communicator communicator) const {
    return costs_.collective(collective_request(kind, bytes, communicator_shape(plan_, communicator))).time_s;
  }

  // A MoE layer's routing, drawn once for every shard the bound walks.
  const ExpertLoad& load_of(std::int64_t layer) {
    if (loads_.empty()) loads_.resize(static_cast<std::size_t>(arch_.num_layers));
    auto& load = loads_[static_cast<std::size_t>(layer)];
    if (!load) load = layer_expert_load(arch_, plan_, tokens_ * plan_.sequence_share(), layer);
    return *load;
  }

  // The expert shards whose loads differ: the simulated ranks of a stage, one per EP-MP index
  // (the ETP ranks of a shard see the same rows).
  std::int64_t expert_shards() const {
    return std::max<std::int64_t>(1, simulated_ranks_per_stage(arch_, plan_, SimOptions{}) / plan_.etp);
  }

  // Expert TP's gather and scatter of `bytes` of rows, together (zero without expert TP).
  double etp_s(double bytes) const {
    if (plan_.etp == 1) return 0.0;
    return collective_s(CollectiveKind::all_gather, bytes, Communicator::etp) +
           collective_s(CollectiveKind::reduce_scatter, bytes, Communicator::etp);
  }

  // One microbatch's hidden states between neighbouring stages (sim/schedules/pipeline_transfers).
  double transfer_s() const {
    const double bytes = tokens_ * dbl(arch_.d_model) * bytes_of(plan_.precision.compute) * plan_.sequence_share();
    return collective_s(CollectiveKind::send_recv, bytes, Communicator::pp_neighbours);
  }

  // The parameter-sync strategy's share of stage s's bound (none for unit_compute_times, which
  // has no inventory).
  SyncBounds sync_bounds(std::size_t stage, const std::vector<const std::vector<LocalTensor>*>& tensors,
                         const std::vector<PipeOp>& order) const {
    if (tensors.empty()) return {};
    return param_sync_for(plan_).stage_bounds(
        {arch_, *tensors[stage], plan_, costs_, shape_.microbatches, static_cast<std::int64_t>(stage), order});
  }

  // What the strategy's hooks add to one pass.
  static double share_of(const ComputeShare& share, const PipeOp& op) {
    if (share.forward.empty()) return 0.0;
    const auto c = static_cast<std::size_t>(op.chunk);
    if (op.forward) return share.forward[c] + (share.forward_wait.empty() ? 0.0 : share.forward_wait[c]);
    return (op.part != BackwardPart::weight ? share.backward[c] : 0.0) + (op.frees() ? share.gradients[c] : 0.0);
  }

  const std::vector<const std::vector<LocalTensor>*>* stages_;
  const Architecture& arch_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  BatchShape shape_;
  double tokens_ = 0;
  LayerWorkCache work_;
  std::vector<std::optional<ExpertLoad>> loads_;  // per layer, drawn on first use
};

}  // namespace

std::vector<double> unit_compute_times(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs) {
  return BoundBuilder(arch, plan, costs).unit_times();
}

StepBound step_time_lower_bound(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                                const CostBook& costs) {
  const std::vector<std::vector<LocalTensor>> made = tensors_by_stage(inv, arch, plan);
  std::vector<const std::vector<LocalTensor>*> stages;
  for (const auto& t : made) stages.push_back(&t);
  return step_time_lower_bound(arch, stages, plan, costs);
}

StepBound step_time_lower_bound(const Architecture& arch, const std::vector<const std::vector<LocalTensor>*>& stages,
                                const ParallelPlan& plan, const CostBook& costs) {
  if (stages.size() != static_cast<std::size_t>(plan.pp))
    throw std::logic_error("step_time_lower_bound: tensors for " + std::to_string(stages.size()) + " stages");
  return BoundBuilder(arch, plan, costs, &stages).bound();
}

}  // namespace moesim
