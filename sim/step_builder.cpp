#include "sim/step_builder.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>

#include "models/costs/layer_work.hpp"
#include "models/moe/routing.hpp"
#include "models/plan/sync_free.hpp"
#include "sim/moe_block.hpp"
#include "sim/offload_copies.hpp"
#include "sim/schedules/expert_parallel.hpp"
#include "sim/schedules/param_sync.hpp"
#include "sim/schedules/pipeline_transfers.hpp"
#include "sim/step_emitter.hpp"
#include "sim/unit_passes.hpp"

namespace moesim {

namespace {

// One simulated rank's share of the step: its kernels' times and what its strategy needs.
struct RankState {
  std::vector<LocalTensor> tensors;
  RankUnitWork work;                    // its kernels by unit (unit_passes.hpp)
  RankUnitWork first_try;               // a rerun step's first try: routed rows capped at the budget
  UnitTable<double> local_params;       // elements held per unit (-1 embedding, L head): its TP shard, its experts
  UnitTable<double> unit_expert_numel;  // of which routed experts
  UnitTable<std::int32_t> unit_chunk;   // the model chunk whose passes run each unit (-1: another stage's)
  std::unique_ptr<ParamSync> sync;
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
        stash_(arch, plan, costs, emit_),
        units_(arch, plan, emit_, tokens_, stash_),
        pipeline_(plan, units_.edge_tp_bytes() * plan.sequence_share()),
        offload_(arch, plan, costs, emit_) {
    places_ = layer_places(plan, arch);  // embedding, layers, head
    rerun_ = sync_free_rerun(plan, arch);
  }

  BuiltStep build() {
    out_.ranks.clear(), out_.ops.clear(), out_.routing.clear();
    out_.dropped_fraction = 0;
    out_.rerun = rerun_.why(plan_);
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
      const std::vector<PipeOp> ops = stage_schedule(plan_, out_.ranks[r].stage, shape_.microbatches);
      stash_.set_enabled(true);
      if (rerun_.reruns()) first_try(r, ops);
      run_passes(r, ops, true);
      ranks_[r].sync->end_of_step();
    }
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  // The stage's passes in order; `record`: their spans are the step's (the replay measures the
  // activations in flight from them).
  void run_passes(std::uint32_t r, const std::vector<PipeOp>& ops, bool record) {
    for (std::size_t k = 0; k < ops.size(); ++k) {
      OpSpan span{r, ops[k], kNoTask, kNoTask};
      if (ops[k].forward && stash_.enabled()) begin_forward(r, ops[k]);
      if (ops[k].fused_with_next && k + 1 < ops.size()) {
        OpSpan partner{r, ops[k + 1], kNoTask, kNoTask};
        run_fused(r, span, partner);
        if (record) out_.ops.push_back(span), out_.ops.push_back(partner);
        ++k;
        continue;
      }
      if (stash_.enabled() && ops[k].forward && k + 1 < ops.size() && !ops[k + 1].forward &&
          ops[k + 1].microbatch == ops[k].microbatch && ops[k + 1].chunk == ops[k].chunk) {
        keep_last_moe_layer(r, ops[k]);
      }
      run_pass(r, ops[k], span);
      if (record) out_.ops.push_back(span);
    }
  }

  // The paged stash's pages a forward pass may take: its MoE layers' balanced rows x the factors.
  void begin_forward(std::uint32_t r, const PipeOp& op) {
    std::int64_t moe = 0;
    for (const std::int64_t u : units_of(r, op)) moe += u >= 0 && u < arch_.num_layers && arch_.is_moe_layer(u);
    stash_.begin_forward(r, moe);
  }

  // A forward pass whose own backward runs next: its last MoE layer's saved tensors stay where
  // they are (paged_stash.py: no stash when the next schedule layer is its own backward).
  void keep_last_moe_layer(std::uint32_t r, const PipeOp& op) {
    const std::vector<std::int64_t>& units = units_of(r, op);
    for (auto u = units.rbegin(); u != units.rend(); ++u) {
      if (*u >= 0 && *u < arch_.num_layers && arch_.is_moe_layer(*u)) {
        stash_.keep(r, *u, op.microbatch);
        return;
      }
    }
  }

  // The first try of a step the sync-free MoE path reruns (models/plan/sync_free.hpp,
  // PagedStashRunner.__call__): every pass with the routed rows capped at the budget (HybridEP
  // drops the rest), the end of its gradient path and the zeroing of its gradients (the
  // strategy's between_tries), then check_moe_overflow: the three overflow flags (int32) all-reduced
  // and read on the host (.item()), which the second try's kernels wait for. The flags go over
  // the default group (every rank); here over each stage's data-parallel ranks, the stages
  // meeting through the pipeline's transfers.
  void first_try(std::uint32_t r, const std::vector<PipeOp>& ops) {
    constexpr double kFlagBytes = 3 * sizeof(std::int32_t);
    RankState& st = ranks_[r];
    emit_.set_first_try(true);
    std::swap(st.work, st.first_try);
    run_passes(r, ops, false);
    std::swap(st.work, st.first_try);
    stash_.set_enabled(false);  // prepare_for_rerun: the second try runs without the paged stash
    offload_.new_try(r);
    const TaskId ended = st.sync->between_tries();
    const TaskId flags = emit_.collective(
        {r, StreamKind::comm_dp, PhaseTag::rerun, -1, -1},
        {Communicator::dp, CollectivePurpose::rerun_check, CollectiveKind::all_reduce, kFlagBytes}, ended);
    emit_.kernel({r, StreamKind::compute, PhaseTag::rerun, -1, -1}, TaskKind::host, 0.0, "read overflow flags", flags);
    emit_.set_first_try(false);
  }

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
    st.work.layers.resize(static_cast<std::size_t>(arch_.num_layers));
    if (rerun_.reruns()) st.first_try.layers.resize(static_cast<std::size_t>(arch_.num_layers));
    for (std::int64_t l = 0; l < arch_.num_layers; ++l) {
      if (places_[static_cast<std::size_t>(l + 1)].stage != sr.stage) continue;
      ShardRows shard;
      double share = 1;  // this rank's routed rows over an even share
      if (arch_.is_moe_layer(l)) {
        const ExpertLoad load = layer_expert_load(arch_, plan_, tokens_ * plan_.sequence_share(), l);
        shard = shard_expert_rows(load, arch_, plan_, sr.ep_mp);
        share = shard.share(plan_.ep);
        routed_rows_ += shard.routed;
        dropped_rows_ += shard.dropped;
        if (sr.ep_mp == 0 && plan_.routing.kind != RoutingKind::uniform) {  // the layer's group, once
          out_.routing.push_back({l, rank_imbalance(load, plan_.ep), shard.dropped / (shard.routed + shard.dropped)});
        }
      }
      st.work.layers[static_cast<std::size_t>(l)] = work_.get(l, shard.rows);
      if (rerun_.reruns()) {
        // The first try's dispatch fills at most the budget's rows on this rank.
        const double cap = plan_.routing.rank_capacity_factor;
        if (share > cap)
          for (double& rows : shard.rows) rows *= cap / share;
        st.first_try.layers[static_cast<std::size_t>(l)] = work_.get(l, shard.rows);
      }
      offload_.set_layer(r, static_cast<std::uint32_t>(out_.ranks.size()), l, tokens_, share);
      stash_.set_layer(r, static_cast<std::uint32_t>(out_.ranks.size()), l, tokens_, share);
    }
    st.work.edge = edge_work(arch_, plan_, costs_, tokens_);
    st.first_try.edge = st.work.edge;
    // Each stage has the same number of simulated ranks, so the ratio is the step's.
    if (routed_rows_ + dropped_rows_ > 0) out_.dropped_fraction = dropped_rows_ / (routed_rows_ + dropped_rows_);
    st.unit_chunk = UnitTable<std::int32_t>(arch_.num_layers, -1);
    for (std::int64_t unit = -1; unit <= arch_.num_layers; ++unit) {
      const LayerPlace& at = places_[static_cast<std::size_t>(unit + 1)];
      if (at.stage == sr.stage) st.unit_chunk[unit] = static_cast<std::int32_t>(at.chunk);
    }
    st.sync = param_sync_for(plan_).make({r, sr, plan_, shape_.microbatches, arch_.num_layers, arch_.tie_embeddings,
                                          st.tensors, st.local_params, st.unit_expert_numel, st.unit_chunk, emit_});
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
      const LayerPlace& pl = places_[static_cast<std::size_t>(l + 1)];
      if (pl.stage == sr.stage && pl.chunk == op.chunk) units.push_back(l);
    }
    if (pipeline_.ends_model(sr, op)) units.push_back(arch_.num_layers);
    if (!op.forward) std::reverse(units.begin(), units.end());
    return units;
  }

  void run_pass(std::uint32_t r, const PipeOp& op, OpSpan& span) {
    TaskId cursor = pipeline_.receive(emit_, r, out_.ranks[r], op);
    const std::vector<std::int64_t>& units = units_of(r, op);
    for (std::size_t i = 0; i < units.size(); ++i) run_unit(r, op, units, i, cursor, span);
    finish_pass(r, op, cursor, span);
  }

  // Unit `i` of a pass, its strategy's hooks around it; `span.first` is set at the pass's first
  // compute-stream task.
  void run_unit(std::uint32_t r, const PipeOp& op, const std::vector<std::int64_t>& units, std::size_t i,
                TaskId& cursor, OpSpan& span) {
    RankState& st = ranks_[r];
    const std::int64_t u = units[i];
    const auto from = static_cast<TaskId>(out_.graph.size());
    if (op.part == BackwardPart::weight) {
      // W needs no weights (dW = dY^T X), so no gather; the gradient hooks wait for it.
      units_.weight_gradients(st.work, r, u, op.microbatch, cursor);
      st.sync->after_unit_backward(u, op.microbatch, cursor);
    } else {
      cursor = st.sync->before_unit({!op.forward, units, i, op.microbatch}, cursor);
      if (op.forward) {
        units_.forward(st.work, r, u, op.microbatch, PhaseTag::forward, cursor);
        offload_.after_forward(r, u, op.microbatch, cursor);
      } else {
        cursor = offload_.before_backward(r, units, i, op.microbatch, cursor);
        units_.backward(st.work, r, u, op.microbatch, op.part, cursor);
      }
      if (op.frees()) st.sync->after_unit_backward(u, op.microbatch, cursor);
    }
    if (span.first == kNoTask) span.first = out_.graph.first_on(StreamKind::compute, from);
  }

  void finish_pass(std::uint32_t r, const PipeOp& op, TaskId cursor, OpSpan& span) {
    const SimRank& sr = out_.ranks[r];
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

  // The EP all-to-all overlap's fused forward and backward (Megatron-Core
  // TransformerModelChunkSchedulePlan.run): the forward's embedding and the backward's head
  // first, then the forward's j-th block with the backward's j-th, interleaved piece by piece
  // where both are MoE blocks, then what is left of each.
  void run_fused(std::uint32_t r, OpSpan& f_span, OpSpan& b_span) {
    const PipeOp f_op = f_span.op, b_op = b_span.op;
    TaskId f = pipeline_.receive(emit_, r, out_.ranks[r], f_op);
    TaskId b = pipeline_.receive(emit_, r, out_.ranks[r], b_op);
    const std::vector<std::int64_t>& fu = units_of(r, f_op);
    const std::vector<std::int64_t>& bu = units_of(r, b_op);
    std::size_t fi = 0, bi = 0;
    const auto block = [&](std::int64_t u) { return u >= 0 && u < arch_.num_layers; };
    if (fi < fu.size() && !block(fu[fi])) run_unit(r, f_op, fu, fi++, f, f_span);
    if (bi < bu.size() && !block(bu[bi])) run_unit(r, b_op, bu, bi++, b, b_span);
    for (; fi < fu.size() && bi < bu.size() && block(fu[fi]) && block(bu[bi]); ++fi, ++bi) {
      const RankState& st = ranks_[r];
      const auto& layers = st.work.layers;
      if (!layers[static_cast<std::size_t>(fu[fi])].moe || !layers[static_cast<std::size_t>(bu[bi])].moe) {
        run_unit(r, f_op, fu, fi, f, f_span);
        run_unit(r, b_op, bu, bi, b, b_span);
        continue;
      }
      fused_blocks(r, f_op, fu, fi, f, f_span, b_op, bu, bi, b, b_span);
    }
    for (; fi < fu.size(); ++fi) run_unit(r, f_op, fu, fi, f, f_span);
    for (; bi < bu.size(); ++bi) run_unit(r, b_op, bu, bi, b, b_span);
    finish_pass(r, f_op, f, f_span);
    finish_pass(r, b_op, b, b_span);
  }

  // A forward and a backward MoE block as schedule_layer_1f1b orders them, so that each EP
  // transfer runs beside the other block's compute. Compute stream: the combine's backward, the
  // forward's parts before the dispatch, the backward's experts (delay_wgrad: dgrads, then wgrads), the forward's
  // experts, the backward's parts before the dispatch (delayed: then their wgrads), the forward's combine; EP
  // stream: the combine's gradient, the forward's dispatch, the dispatch's gradient, the forward's combine.
  void fused_blocks(std::uint32_t r, const PipeOp& f_op, const std::vector<std::int64_t>& fu, std::size_t fi, TaskId& f,
                    OpSpan& f_span, const PipeOp& b_op, const std::vector<std::int64_t>& bu, std::size_t bi, TaskId& b,
                    OpSpan& b_span) {
    RankState& st = ranks_[r];
    const std::int64_t fl = fu[fi], bl = bu[bi];
    b = offload_.before_backward(r, bu, bi, b_op.microbatch, st.sync->before_unit({true, bu, bi, b_op.microbatch}, b));
    MoeBlockPass bwd(emit_, plan_, {r, StreamKind::compute, PhaseTag::backward, b_op.microbatch, bl},
                     st.work.layers[static_cast<std::size_t>(bl)], /*whole=*/!plan_.ep_delay_wgrad);
    bwd.with(&stash_);
    const auto b_from = static_cast<TaskId>(out_.graph.size());
    const TaskId b_in = bwd.experts_in(bwd.front(b));
    if (b_span.first == kNoTask) b_span.first = out_.graph.first_on(StreamKind::compute, b_from);
    f = st.sync->before_unit({false, fu, fi, f_op.microbatch}, f);
    MoeBlockPass fwd(emit_, plan_, {r, StreamKind::compute, PhaseTag::forward, f_op.microbatch, fl},
                     st.work.layers[static_cast<std::size_t>(fl)]);
    fwd.with(&stash_);
    const auto f_from = static_cast<TaskId>(out_.graph.size());
    const TaskId f_pre = fwd.front(f);
    if (f_span.first == kNoTask) f_span.first = out_.graph.first_on(StreamKind::compute, f_from);
    const TaskId b_experts = bwd.experts(b_in);
    const TaskId f_in = fwd.experts_in(f_pre);
    const TaskId b_out = bwd.experts_out(b_experts);
    if (plan_.ep_delay_wgrad) bwd.mlp_weight_gradients(b_experts);
    const TaskId f_out = fwd.experts_out(fwd.experts(f_in));
    b = bwd.back(b_out);
    if (plan_.ep_delay_wgrad) b = bwd.attention_weight_gradients(b);
    st.sync->after_unit_backward(bl, b_op.microbatch, b);
    f = fwd.back(f_out);
    offload_.after_forward(r, fl, f_op.microbatch, f);
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
  PagedStashCopies stash_;  // the paged stash's copies (none without moe_paged_stash)
  UnitPasses units_;        // what each unit's pass emits
  PipelineTransfers pipeline_;
  OffloadCopies offload_;           // activation offload's copies (none without offload modules)
  std::vector<LayerPlace> places_;  // by unit + 1: the embedding, the layers, the LM head
  std::vector<RankState> ranks_;
  SyncFreeRerun rerun_;  // whether the step runs twice (models/plan/sync_free.hpp)
  // Routed rows kept and dropped over every prepared rank.
  double routed_rows_ = 0, dropped_rows_ = 0;
};

}  // namespace

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options) {
  return build_step(arch, inv, plan, costs, options, BuiltStep{});
}

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options, BuiltStep&& recycled) {
  return StepBuilder(arch, inv, plan, costs, options, std::move(recycled)).build();
}

}  // namespace moesim
