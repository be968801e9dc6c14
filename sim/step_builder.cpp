#include "sim/step_builder.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>

#include "models/costs/layer_ops.hpp"
#include "models/costs/layer_work.hpp"
#include "models/moe/routing.hpp"
#include "sim/block_parts.hpp"
#include "sim/schedules/expert_parallel.hpp"
#include "sim/schedules/param_sync.hpp"
#include "sim/schedules/pipeline_transfers.hpp"
#include "sim/schedules/tensor_parallel.hpp"
#include "sim/step_emitter.hpp"

namespace moesim {

namespace {

// One simulated rank's share of the step: its kernels' times and what its strategy needs.
struct RankState {
  std::vector<LocalTensor> tensors;
  std::vector<LayerWork> layers;  // by layer index (this stage's only)
  EdgeWork edge;
  UnitTable<double> local_params;       // elements held per unit (-1 embedding, L head): its TP shard, its experts
  UnitTable<double> unit_expert_numel;  // of which routed experts
  std::unique_ptr<ParamSync> sync;
  // By microbatch: the end of its loss under TP (the vocab-parallel reductions after the head's
  // kernel), which the head's backward waits for.
  std::vector<TaskId> loss_done;
  // The units a pass runs, by direction and model chunk ([forward][chunk]), worked out on first use:
  // a step runs each of them once per microbatch.
  std::array<std::vector<std::vector<std::int64_t>>, 2> pass_units;
};

class StepBuilder {
 public:
  StepBuilder(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
              const SimOptions& options, BuiltStep&& recycled)
      : arch_(arch),
        inv_(inv),
        plan_(plan),
        costs_(costs),
        options_(options),
        shape_(batch_shape(plan, arch)),
        tokens_(dbl(shape_.microbatch_tokens)),
        out_(std::move(recycled)),
        work_(arch, plan, costs, tokens_),
        emit_(arch, plan, costs, out_),
        edge_tp_bytes_(tokens_ * dbl(arch.d_model) * bytes_of(plan.precision.compute)),
        pipeline_(plan, edge_tp_bytes_ * plan.sequence_share()) {
    const std::vector<LayerPlace> all = layer_places(plan, arch);  // embedding, layers, head
    place_.assign(all.begin() + 1, all.end() - 1);
  }

  BuiltStep build() {
    out_.ranks.clear();
    out_.ops.clear();
    out_.routing.clear();
    out_.dropped_fraction = 0;
    choose_ranks();
    out_.graph.reset(static_cast<std::uint32_t>(out_.ranks.size()));
    out_.microbatches = shape_.microbatches;
    ranks_.resize(out_.ranks.size());
    // About a dozen tasks per block and microbatch pass; reserving avoids regrowth.
    constexpr std::size_t kTasksPerBlockPass = 12, kTasksPerRankStep = 64;
    out_.graph.reserve(out_.ranks.size() *
                           static_cast<std::size_t>(2 * shape_.microbatches * (arch_.num_layers / plan_.pp + 2)) *
                           kTasksPerBlockPass +
                       kTasksPerRankStep);
    // Each forward and backward chunk pass of a stage sends to or receives from a neighbour.
    if (plan_.pp > 1)
      emit_.reserve_transfers(out_.ranks.size() * static_cast<std::size_t>(2 * shape_.microbatches) *
                              static_cast<std::size_t>(plan_.model_chunks()));
    for (std::uint32_t r = 0; r < out_.ranks.size(); ++r) prepare(r);
    for (std::uint32_t r = 0; r < out_.ranks.size(); ++r) {
      start_step(r);
      for (const PipeOp& op : stage_schedule(plan_, out_.ranks[r].stage, shape_.microbatches)) {
        OpSpan span{r, op, kNoTask, kNoTask};
        run_pass(r, op, span);
        out_.ops.push_back(span);
      }
      ranks_[r].sync->end_of_step();
    }
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  void choose_ranks() {
    const std::int64_t per_stage = simulated_ranks_per_stage(arch_, plan_, options_);
    for (std::int64_t s = 0; s < plan_.pp; ++s) {
      for (std::int64_t i = 0; i < per_stage; ++i) {
        out_.ranks.push_back(
            {coords_of(plan_, s * plan_.stage_ranks() + i), dbl(plan_.stage_ranks()) / dbl(per_stage)});
      }
    }
  }

  void prepare(std::uint32_t r) {
    const SimRank& sr = out_.ranks[r];
    RankState& st = ranks_[r];
    st.tensors = stage_tensors(inv_, arch_, plan_, sr.stage);
    st.local_params = UnitTable<double>(arch_.num_layers);
    st.unit_expert_numel = UnitTable<double>(arch_.num_layers);
    for (const auto& lt : st.tensors) {
      st.local_params[lt.tensor->layer] += lt.local_numel;
      if (lt.tensor->cls == TensorClass::routed_expert) st.unit_expert_numel[lt.tensor->layer] += lt.local_numel;
    }
    st.layers.resize(static_cast<std::size_t>(arch_.num_layers));
    for (std::int64_t l = 0; l < arch_.num_layers; ++l) {
      if (place_[static_cast<std::size_t>(l)].stage != sr.stage) continue;
      ShardRows shard;
      if (arch_.is_moe_layer(l)) {
        shard = shard_expert_rows(arch_, plan_, tokens_ * plan_.sequence_share(), l, sr.ep_mp);
        routed_rows_ += shard.routed;
        dropped_rows_ += shard.dropped;
        if (sr.ep_mp == 0 && plan_.routing.kind != RoutingKind::uniform) {  // the layer's group, once
          out_.routing.push_back({l, shard.imbalance, shard.dropped / (shard.routed + shard.dropped)});
        }
      }
      st.layers[static_cast<std::size_t>(l)] = work_.get(l, shard.rows);
    }
    st.edge = edge_work(arch_, plan_, costs_, tokens_);
    // Each stage has the same number of simulated ranks, so the ratio is the step's.
    if (routed_rows_ + dropped_rows_ > 0) out_.dropped_fraction = dropped_rows_ / (routed_rows_ + dropped_rows_);
    st.sync = param_sync_for(plan_).make({r, sr, plan_, shape_.microbatches, arch_.num_layers, arch_.tie_embeddings,
                                          st.tensors, st.local_params, st.unit_expert_numel, emit_});
  }

  // The host's share of the step first (the GPU waits for it: optimizer launch, loss and
  // token-count syncs), then the strategy's once-per-step work.
  void start_step(std::uint32_t r) {
    emit_.kernel({r, StreamKind::compute, PhaseTag::optimizer, -1, -1}, TaskKind::host, costs_.step_host_s(),
                 "host step overhead");
    ranks_[r].sync->start_of_step();
  }

  // The pass's units in execution order: the embedding first and the LM head last in forward.
  const std::vector<std::int64_t>& units_of(std::uint32_t r, const PipeOp& op) {
    auto& by_chunk = ranks_[r].pass_units[op.forward ? 1 : 0];
    const auto chunk = static_cast<std::size_t>(op.chunk);
    if (chunk >= by_chunk.size()) by_chunk.resize(chunk + 1);
    std::vector<std::int64_t>& units = by_chunk[chunk];
    if (!units.empty()) return units;
    const SimRank& sr = out_.ranks[r];
    if (pipeline_.starts_model(sr, op)) units.push_back(-1);
    for (std::int64_t l = 0; l < arch_.num_layers; ++l) {
      const LayerPlace& pl = place_[static_cast<std::size_t>(l)];
      if (pl.stage == sr.stage && pl.chunk == op.chunk) units.push_back(l);
    }
    if (pipeline_.ends_model(sr, op)) units.push_back(arch_.num_layers);
    if (!op.forward) std::reverse(units.begin(), units.end());
    return units;
  }

  void run_pass(std::uint32_t r, const PipeOp& op, OpSpan& span) {
    const SimRank& sr = out_.ranks[r];
    RankState& st = ranks_[r];
    TaskId cursor = pipeline_.receive(emit_, r, sr, op);
    const std::vector<std::int64_t>& units = units_of(r, op);
    const auto first_task = static_cast<TaskId>(out_.graph.size());
    for (std::size_t i = 0; i < units.size(); ++i) {
      const std::int64_t u = units[i];
      if (op.part == BackwardPart::weight) {
        // W needs no weights (dW = dY^T X), so no gather; the gradient hooks wait for it.
        weight_gradients(r, u, op.microbatch, cursor);
        st.sync->after_unit_backward(u, op.microbatch, cursor);
        continue;
      }
      cursor = st.sync->before_unit({!op.forward, units, i, op.microbatch}, cursor);
      if (op.forward)
        forward_unit(r, u, op.microbatch, PhaseTag::forward, cursor);
      else
        backward_unit(r, u, op.microbatch, op.part, cursor);
      if (op.frees()) st.sync->after_unit_backward(u, op.microbatch, cursor);
    }
    span.first = first_on_compute_stream(first_task);
    if (op.forward) {
      const TaskId sent = pipeline_.send(emit_, r, sr, op, cursor);
      span.last = sent == kNoTask ? cursor : sent;
    } else {
      // The pass's activations are freed when its last compute ends (that of its W pass when the
      // backward is split), not when the gradient send does.
      span.last = cursor;
      pipeline_.send(emit_, r, sr, op, cursor);
    }
  }

  // The first compute-stream task from `from` on: where a pass starts saving activations (the
  // FSDP gathers before it may run ahead on their own stream).
  TaskId first_on_compute_stream(TaskId from) const {
    for (TaskId id = from; id < out_.graph.size(); ++id) {
      if (out_.graph.task(id).stream == StreamKind::compute) return id;
    }
    return kNoTask;
  }

  // A TP point of unit `u` in `pass` (nothing without TP, or where the point has no collective).
  TaskId tp(const TaskPlace& at, LayerPoint point, TpPass pass, std::size_t index, double bytes, TaskId ready) {
    return tp_point(emit_, plan_, at, point, pass, static_cast<std::int32_t>(index), bytes, ready);
  }

  void forward_unit(std::uint32_t r, std::int64_t u, std::int32_t mb, PhaseTag phase, TaskId& cursor) {
    const RankState& st = ranks_[r];
    const TpPass tp_pass = phase == PhaseTag::recompute ? TpPass::recompute : TpPass::forward;
    if (u == -1) {
      const TaskPlace at{r, StreamKind::compute, phase, mb, u};
      cursor = emit_.kernel(at, TaskKind::memory, st.edge.embed.fwd, "embedding", cursor);
      // The vocab-parallel lookup's partial rows summed (scattered under SP) over the TP group.
      cursor = tp(at, LayerPoint::tp_exit, tp_pass, 0, edge_tp_bytes_, cursor);
      return;
    }
    if (u == arch_.num_layers) {
      const TaskPlace at{r, StreamKind::compute, phase, mb, u};
      cursor = tp(at, LayerPoint::tp_enter, tp_pass, 0, edge_tp_bytes_, cursor);
      cursor = emit_.kernel(at, TaskKind::compute, st.edge.head.fwd, "LM head + loss", cursor);
      cursor = vocab_parallel_loss(emit_, plan_, at, 1, tokens_, cursor);
      if (plan_.tp > 1) {
        auto& done = ranks_[r].loss_done;
        if (done.size() <= static_cast<std::size_t>(mb)) done.resize(static_cast<std::size_t>(mb) + 1, kNoTask);
        done[static_cast<std::size_t>(mb)] = cursor;
      }
      return;
    }
    const LayerWork& w = st.layers[static_cast<std::size_t>(u)];
    const TaskPlace at{r, StreamKind::compute, phase, mb, u};
    PartsPass parts;
    parts.recompute = phase == PhaseTag::recompute;
    const TaskId pre = emit_parts(emit_, plan_, at, w, parts, cursor);
    cursor = pre;
    if (!w.moe) return;
    TaskId shared = kNoTask;
    if (w.shared.fwd > 0) {
      const TaskPlace side{r, StreamKind::side, phase, mb, u};
      const std::size_t n = w.pre_points.size();
      shared = w.shared_tp ? tp(at, LayerPoint::tp_enter, tp_pass, n, w.tp_bytes, pre) : pre;
      shared = emit_.kernel(side, TaskKind::compute, w.shared.fwd, "shared expert", shared);
      if (w.shared_tp) shared = tp(at, LayerPoint::tp_exit, tp_pass, n + 1, w.tp_bytes, shared);
    }
    const ExpertPass pass = phase == PhaseTag::recompute ? ExpertPass::recompute : ExpertPass::forward;
    const TaskId x =
        routed_experts(emit_, plan_, at, pass, {w.a2a_bytes, w.dispatch_bytes, w.experts.fwd, w.etp_bytes}, pre);
    cursor = emit_.kernel(at, TaskKind::compute, w.post.fwd, "combine", x, shared);
  }

  // The unit's whole backward, or only its input-gradient part (B) when the schedule splits it:
  // everything but the GEMMs' weight gradients, recompute and the EP all-to-alls included.
  void backward_unit(std::uint32_t r, std::int64_t u, std::int32_t mb, BackwardPart part, TaskId& cursor) {
    const RankState& st = ranks_[r];
    const TaskPlace at{r, StreamKind::compute, PhaseTag::backward, mb, u};
    const bool whole = part == BackwardPart::whole;
    const auto time = [whole](const PassTimes& t) { return whole ? t.bwd : t.input_grad(); };
    if (u == arch_.num_layers) {
      const TaskId loss =
          static_cast<std::size_t>(mb) < st.loss_done.size() ? st.loss_done[static_cast<std::size_t>(mb)] : kNoTask;
      cursor = emit_.kernel(at, TaskKind::compute, time(st.edge.head), "LM head + loss backward", cursor, loss);
      cursor = tp(at, LayerPoint::tp_enter, TpPass::backward, 0, edge_tp_bytes_, cursor);
      return;
    }
    if (u == -1) {
      cursor = tp(at, LayerPoint::tp_exit, TpPass::backward, 0, edge_tp_bytes_, cursor);
      cursor = emit_.kernel(at, TaskKind::memory, time(st.edge.embed), "embedding backward", cursor);
      return;
    }
    const LayerWork& w = st.layers[static_cast<std::size_t>(u)];
    if (plan_.recompute == Recompute::full) forward_unit(r, u, mb, PhaseTag::recompute, cursor);
    const double recompute = w.partial_recompute;  // what a partial recompute redoes in backward
    TaskId joined = kNoTask;                       // the routed and shared experts' backward, both done
    TaskId also = kNoTask;
    if (w.moe) {
      const TaskId post = emit_.kernel(at, TaskKind::compute, time(w.post), "combine backward", cursor);
      TaskId shared = kNoTask;
      if (w.shared.bwd > 0) {
        const std::size_t n = w.pre_points.size();
        shared = w.shared_tp ? tp(at, LayerPoint::tp_exit, TpPass::backward, n + 1, w.tp_bytes, post) : post;
        shared = emit_.kernel({r, StreamKind::side, PhaseTag::backward, mb, u}, TaskKind::compute, time(w.shared),
                              "shared expert backward", shared);
        if (w.shared_tp) shared = tp(at, LayerPoint::tp_enter, TpPass::backward, n, w.tp_bytes, shared);
      }
      joined = routed_experts(emit_, plan_, at, ExpertPass::backward,
                              {w.a2a_bytes, w.a2a_bytes, time(w.experts) + recompute, w.etp_bytes}, post);
      also = shared;
    } else {
      joined = cursor;
    }
    // The parts before the dispatch in reverse; a dense block's partial recompute runs with its
    // first backward kernel.
    PartsPass parts;
    parts.backward = true;
    parts.whole = whole;
    parts.extra_first = w.moe ? 0.0 : recompute;
    parts.also_first = also;
    cursor = emit_parts(emit_, plan_, at, w, parts, joined);
  }

  // The unit's W pass: its GEMMs' weight gradients as one kernel on the compute stream (the
  // shared expert's too: nothing runs beside them to overlap); the embedding has none.
  void weight_gradients(std::uint32_t r, std::int64_t u, std::int32_t mb, TaskId& cursor) {
    // The embedding's gradient (a scatter-add into its rows) is its whole backward, run in B.
    if (u < 0) return;
    const RankState& st = ranks_[r];
    const double time =
        u == arch_.num_layers ? st.edge.head.wgrad : st.layers[static_cast<std::size_t>(u)].weight_gradients();
    cursor = emit_.kernel({r, StreamKind::compute, PhaseTag::backward, mb, u}, TaskKind::compute, time,
                          "weight gradients", cursor);
  }

  const Architecture& arch_;
  const Inventory& inv_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  SimOptions options_;
  BatchShape shape_;
  double tokens_ = 0;
  BuiltStep out_;
  LayerWorkCache work_;
  StepEmitter emit_;
  double edge_tp_bytes_ = 0;  // the [T, d] activations the embedding's and LM head's TP collectives move
  PipelineTransfers pipeline_;
  std::vector<LayerPlace> place_;  // by layer index
  std::vector<RankState> ranks_;
  // Routed rows kept and dropped over every prepared rank.
  double routed_rows_ = 0, dropped_rows_ = 0;
};

}  // namespace

ShardRows shard_expert_rows(const Architecture& arch, const ParallelPlan& plan, double tokens, std::int64_t layer,
                            std::int64_t ep_mp) {
  ShardRows out;
  // The rows of the EP x ETP group's tokens (an expert's rows are gathered over its ETP ranks).
  const ExpertLoad load = route(plan.routing, arch.moe->num_experts, arch.moe->top_k, tokens * dbl(plan.ep * plan.etp),
                                static_cast<std::uint64_t>(layer));
  const std::size_t per = static_cast<std::size_t>(arch.moe->num_experts / plan.ep);
  const auto first = load.rows.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(ep_mp));
  out.rows.assign(first, first + static_cast<std::ptrdiff_t>(per));
  for (double x : load.rows) out.routed += x;
  out.dropped = load.dropped;
  out.imbalance = rank_imbalance(load, plan.ep);
  return out;
}

std::int64_t simulated_ranks_per_stage(const Architecture& arch, const ParallelPlan& plan, const SimOptions& options) {
  const bool uneven = arch.moe && plan.routing.kind != RoutingKind::uniform;
  return options.all_ranks ? plan.stage_ranks() : (uneven ? plan.ep * plan.etp : 1);
}

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options) {
  return build_step(arch, inv, plan, costs, options, BuiltStep{});
}

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options, BuiltStep&& recycled) {
  return StepBuilder(arch, inv, plan, costs, options, std::move(recycled)).build();
}

}  // namespace moesim
