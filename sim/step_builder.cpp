#include "sim/step_builder.hpp"

#include <algorithm>

#include "models/moe/routing.hpp"
#include "sim/step_builder_impl.hpp"

namespace moesim {

namespace detail {

namespace {
double dbl(std::int64_t v) { return static_cast<double>(v); }
enum Tag { kDispatchFwd, kCombineFwd, kDispatchBwd, kCombineBwd, kDispatchRe, kCombineRe, kGatherFwd, kGatherBwd, kReduce, kReplica };
}  // namespace

StepBuilder::StepBuilder(const Architecture& a, const Inventory& inv, const ParallelPlan& p, const CostBook& c,
                         const SimOptions& o)
    : a_(a), inv_(inv), p_(p), c_(c), o_(o) {
  virt_ = p.pp_schedule == PipelineSchedule::interleaved_1f1b ? p.pp_virtual : 1;
  const BatchShape b = batch_shape(p, a);
  m_ = b.microbatches;
  tokens_ = dbl(b.microbatch_tokens);
  for (std::int64_t l = 0; l < a.num_layers; ++l) place_.push_back(place_of_layer(p, a, l));
}

void StepBuilder::choose_ranks() {
  const std::int64_t per_stage = moesim::simulated_ranks_per_stage(a_, p_, o_);
  for (std::int64_t s = 0; s < p_.pp; ++s) {
    for (std::int64_t i = 0; i < per_stage; ++i) {
      const RankCoords c = coords_of(p_, s * p_.dp() + i);
      out_.ranks.push_back({s, c.dp, c.ep_mp, c.ep_dp, dbl(p_.dp()) / dbl(per_stage)});
    }
  }
}

void StepBuilder::prepare(std::uint32_t r) {
  const SimRank& sr = out_.ranks[r];
  RankState& st = st_[r];
  const auto tensors = stage_tensors(inv_, a_, p_, sr.stage);
  for (const auto& lt : tensors) {
    st.params_by_layer[lt.tensor->layer] += lt.local_numel;
    st.unit_numel[lt.tensor->layer] += dbl(lt.tensor->numel);
  }
  st.buckets = ddp_buckets(tensors, p_);
  st.layers.resize(static_cast<std::size_t>(a_.num_layers));
  for (std::int64_t l = 0; l < a_.num_layers; ++l) {
    if (place_[static_cast<std::size_t>(l)].stage != sr.stage) continue;
    std::vector<double> rows;
    if (a_.is_moe_layer(l)) {
      // Tokens of the whole EP-MP group are routed together; this rank serves one shard.
      const ExpertLoad load = route(p_.routing, a_.moe->num_experts, a_.moe->top_k, tokens_ * dbl(p_.ep),
                                    static_cast<std::uint64_t>(l));
      const std::size_t per = static_cast<std::size_t>(a_.moe->num_experts / p_.ep);
      const auto first = load.rows.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(sr.ep_mp));
      rows.assign(first, first + static_cast<std::ptrdiff_t>(per));
      for (double x : load.rows) routed_rows_ += x;
      dropped_rows_ += load.dropped;
    }
    const double params = st.params_by_layer.count(l) ? st.params_by_layer.at(l) : 0.0;
    st.layers[static_cast<std::size_t>(l)] = layer_work(a_, p_, c_, l, tokens_, rows, params);
  }
  st.edge = edge_work(a_, p_, c_, tokens_);
  if (routed_rows_ + dropped_rows_ > 0) out_.dropped_fraction = dropped_rows_ / (routed_rows_ + dropped_rows_);
}

TaskId StepBuilder::fsdp_materialize(std::uint32_t r, const std::vector<std::int64_t>& units, std::size_t i,
                                     const std::map<std::int64_t, TaskId>& done, int mb, int tag, TaskId cursor) {
  // Implicit prefetch: the gather of unit i may run ahead while unit i - 1 - depth's weights are
  // still in use, no further (FSDP2's prefetch). The compute stream then copies the gathered
  // flat buffer out into the unit's parameters (read and write BF16 once).
  const auto back = static_cast<std::ptrdiff_t>(i) - 1 - p_.fsdp_prefetch;
  const TaskId limit = back >= 0 ? done.at(units[static_cast<std::size_t>(back)]) : kNoTask;
  const std::int64_t u = units[i];
  const auto& numel = st_[r].unit_numel;
  const double n = numel.count(u) ? numel.at(u) : 0.0;
  const double e = bytes_of(p_.precision.compute);
  const TaskId g = collective(r, Domain::fsdp_shard, CollectiveKindTag::all_gather, PhaseTag::fsdp_gather, StreamKind::comm_dp, n * e, mb, u,
                              tag, limit);
  return compute(r, StreamKind::compute, PhaseTag::fsdp_gather, c_.memory(2 * n * e), mb, u, "all-gather copy-out", cursor, g);
}

std::vector<std::int64_t> StepBuilder::chunk_layers(std::int64_t stage, std::int64_t chunk) const {
  std::vector<std::int64_t> out;
  for (std::int64_t l = 0; l < a_.num_layers; ++l) {
    const LayerPlace& pl = place_[static_cast<std::size_t>(l)];
    if (pl.stage == stage && pl.chunk == chunk) out.push_back(l);
  }
  return out;
}

std::int64_t StepBuilder::group_size(Domain d) const {
  switch (d) {
    case Domain::dp: return p_.dp();
    case Domain::ep_mp: return p_.ep;
    case Domain::ep_dp: return p_.ep_dp();
    case Domain::fsdp_shard: return p_.shard_group();
    case Domain::hsdp_replica: return p_.dp() / p_.shard_group();
    case Domain::p2p: return 2;
  }
  return 1;
}

std::int64_t StepBuilder::per_node(Domain d) const {
  // Rank order PP, DP, EP-MP innermost: contiguous groups fill nodes, strided ones spread.
  const std::int64_t g = p_.gpus_per_node;
  switch (d) {
    case Domain::dp: return std::min(p_.dp(), g);
    case Domain::ep_mp: return std::min(p_.ep, g);
    case Domain::ep_dp: return std::min(p_.ep_dp(), std::max<std::int64_t>(1, g / p_.ep));
    case Domain::fsdp_shard: return std::min(p_.shard_group(), g);
    case Domain::hsdp_replica: return std::min(p_.dp() / p_.shard_group(), std::max<std::int64_t>(1, g / p_.shard_group()));
    case Domain::p2p: return p_.dp() >= g ? 1 : 2;
  }
  return 1;
}

TaskId StepBuilder::compute(std::uint32_t r, StreamKind s, PhaseTag ph, double work, int mb, std::int64_t layer,
                            const char* what, TaskId dep, TaskId dep2) {
  Task t;
  t.rank = r;
  t.stream = s;
  t.kind = TaskKind::compute;
  t.phase = ph;
  t.work_s = work;
  t.microbatch = mb;
  t.layer = static_cast<std::int32_t>(layer);
  t.label = out_.graph.label(what);
  const TaskId id = out_.graph.add(t);
  out_.graph.depend(dep, id);
  out_.graph.depend(dep2, id);
  return id;
}

TaskId StepBuilder::collective(std::uint32_t r, Domain d, CollectiveKindTag kind, PhaseTag ph, StreamKind s, double bytes,
                               int mb, std::int64_t layer, int tag, TaskId dep) {
  const SimRank& sr = out_.ranks[r];
  std::int64_t k1 = sr.stage, k2 = 0;
  if (d == Domain::ep_mp) k2 = sr.ep_dp;
  if (d == Domain::ep_dp) k2 = sr.ep_mp;
  if (d == Domain::fsdp_shard) k2 = sr.dp / p_.shard_group();
  if (d == Domain::hsdp_replica) k2 = sr.dp % p_.shard_group();
  const GroupKey key{static_cast<int>(d), k1, k2, mb, layer, tag};
  auto [it, fresh] = groups_.try_emplace(key, 0u);
  if (fresh) it->second = out_.graph.new_group();
  const std::int64_t n = group_size(d), pn = per_node(d);
  const auto ck = std::make_tuple(static_cast<int>(kind), bytes, n, pn);
  auto cached = comm_cache_.find(ck);
  if (cached == comm_cache_.end()) cached = comm_cache_.emplace(ck, c_.collective(kind, bytes, n, pn)).first;
  Task t;
  t.rank = r;
  t.stream = s;
  t.kind = TaskKind::collective;
  t.phase = ph;
  t.coll = kind;
  t.work_s = cached->second.time_s;
  t.link_bytes[0] = cached->second.nvlink_bytes;
  t.link_bytes[1] = cached->second.nic_bytes;
  t.group = it->second;
  t.microbatch = mb;
  t.layer = static_cast<std::int32_t>(layer);
  auto [lab, new_label] = coll_labels_.try_emplace({static_cast<int>(ph), static_cast<int>(kind)}, 0u);
  if (new_label) lab->second = out_.graph.label(std::string(name_of(ph)) + " " + name_of(kind));
  t.label = lab->second;
  const TaskId id = out_.graph.add(t);
  out_.graph.depend(dep, id);
  return id;
}

TaskId StepBuilder::p2p(std::uint32_t r, std::int64_t from, std::int64_t to, double bytes, int mb, int chunk, bool forward,
                        TaskId dep) {
  const SimRank& sr = out_.ranks[r];
  const GroupKey key{static_cast<int>(Domain::p2p), from * p_.pp + to, sr.dp, mb, chunk, forward ? 1 : 0};
  auto [it, fresh] = groups_.try_emplace(key, 0u);
  if (fresh) it->second = out_.graph.new_group();
  const CommCost cost = c_.collective(CollectiveKindTag::send_recv, bytes, 2, per_node(Domain::p2p));
  Task t;
  t.rank = r;
  t.stream = StreamKind::comm_pp;
  t.kind = TaskKind::p2p;
  t.phase = PhaseTag::pp_p2p;
  t.coll = CollectiveKindTag::send_recv;
  t.work_s = cost.time_s;
  t.link_bytes[0] = cost.nvlink_bytes;
  t.link_bytes[1] = cost.nic_bytes;
  t.group = it->second;
  t.microbatch = mb;
  t.label = out_.graph.label(forward ? "activations p2p" : "activation grads p2p");
  const TaskId id = out_.graph.add(t);
  out_.graph.depend(dep, id);
  return id;
}

void StepBuilder::emit_layer_forward(std::uint32_t r, std::int64_t layer, int mb, PhaseTag phase, int tag, TaskId& cursor) {
  const LayerWork& w = st_[r].layers[static_cast<std::size_t>(layer)];
  const TaskId pre = compute(r, StreamKind::compute, phase, w.pre.fwd, mb, layer, w.moe ? "attention + router" : "block", cursor);
  cursor = pre;
  if (!w.moe) return;
  const TaskId shared = w.shared.fwd > 0 ? compute(r, StreamKind::side, phase, w.shared.fwd, mb, layer, "shared expert", pre) : kNoTask;
  TaskId in = pre;
  if (p_.ep > 1) in = collective(r, Domain::ep_mp, CollectiveKindTag::all_to_all, PhaseTag::ep_dispatch, StreamKind::comm_ep, w.a2a_bytes, mb, layer, tag, pre);
  TaskId x = compute(r, StreamKind::compute, phase, w.experts.fwd, mb, layer, "routed experts", in);
  if (p_.ep > 1) x = collective(r, Domain::ep_mp, CollectiveKindTag::all_to_all, PhaseTag::ep_combine, StreamKind::comm_ep, w.a2a_bytes, mb, layer, tag + 1, x);
  cursor = compute(r, StreamKind::compute, phase, w.post.fwd, mb, layer, "combine", x, shared);
}

void StepBuilder::emit_layer_backward(std::uint32_t r, std::int64_t layer, int mb, TaskId& cursor) {
  const LayerWork& w = st_[r].layers[static_cast<std::size_t>(layer)];
  if (p_.recompute == Recompute::full) emit_layer_forward(r, layer, mb, PhaseTag::recompute, kDispatchRe, cursor);
  const double selective = p_.recompute == Recompute::selective ? w.selective_recompute : 0.0;
  if (!w.moe) {
    cursor = compute(r, StreamKind::compute, PhaseTag::backward, w.pre.bwd + selective, mb, layer, "block backward", cursor);
    return;
  }
  const TaskId post = compute(r, StreamKind::compute, PhaseTag::backward, w.post.bwd, mb, layer, "combine backward", cursor);
  const TaskId shared = w.shared.bwd > 0 ? compute(r, StreamKind::side, PhaseTag::backward, w.shared.bwd, mb, layer, "shared expert backward", post) : kNoTask;
  TaskId in = post;
  if (p_.ep > 1) in = collective(r, Domain::ep_mp, CollectiveKindTag::all_to_all, PhaseTag::ep_combine, StreamKind::comm_ep, w.a2a_bytes, mb, layer, kCombineBwd, post);
  TaskId x = compute(r, StreamKind::compute, PhaseTag::backward, w.experts.bwd + selective, mb, layer, "routed experts backward", in);
  if (p_.ep > 1) x = collective(r, Domain::ep_mp, CollectiveKindTag::all_to_all, PhaseTag::ep_dispatch, StreamKind::comm_ep, w.a2a_bytes, mb, layer, kDispatchBwd, x);
  cursor = compute(r, StreamKind::compute, PhaseTag::backward, w.pre.bwd, mb, layer, "attention + router backward", x, shared);
}

void StepBuilder::emit_forward(std::uint32_t r, const PipeOp& op, OpSpan& span) {
  const SimRank& sr = out_.ranks[r];
  RankState& st = st_[r];
  const double act_bytes = tokens_ * dbl(a_.d_model) * bytes_of(p_.precision.compute);
  TaskId cursor = kNoTask;
  if (!first_virtual(sr.stage, op.chunk)) {
    const std::int64_t from = (sr.stage + p_.pp - 1) % p_.pp;
    cursor = p2p(r, from, sr.stage, act_bytes, op.microbatch, op.chunk, true, kNoTask);
  }
  const bool fsdp = p_.design == Design::fsdp;
  std::vector<std::int64_t> units;
  if (first_virtual(sr.stage, op.chunk)) units.push_back(-1);
  for (auto l : chunk_layers(sr.stage, op.chunk)) units.push_back(l);
  if (last_virtual(sr.stage, op.chunk)) units.push_back(a_.num_layers);
  st.done_fwd.clear();
  span.first = static_cast<TaskId>(out_.graph.size());  // the op's first task after the receive
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::int64_t u = units[i];
    if (fsdp) cursor = fsdp_materialize(r, units, i, st.done_fwd, op.microbatch, kGatherFwd, cursor);
    if (u == -1) {
      cursor = compute(r, StreamKind::compute, PhaseTag::forward, st.edge.embed.fwd, op.microbatch, u, "embedding", cursor);
    } else if (u == a_.num_layers) {
      cursor = compute(r, StreamKind::compute, PhaseTag::forward, st.edge.head.fwd, op.microbatch, u, "LM head + loss", cursor);
    } else {
      emit_layer_forward(r, u, op.microbatch, PhaseTag::forward, kDispatchFwd, cursor);
    }
    st.done_fwd[u] = cursor;
  }
  if (!last_virtual(sr.stage, op.chunk)) {
    const std::int64_t to = (sr.stage + 1) % p_.pp;
    cursor = p2p(r, sr.stage, to, act_bytes, op.microbatch, op.chunk + (sr.stage == p_.pp - 1 ? 1 : 0), true, cursor);
  }
  span.last = cursor;
}

void StepBuilder::emit_backward(std::uint32_t r, const PipeOp& op, OpSpan& span) {
  const SimRank& sr = out_.ranks[r];
  RankState& st = st_[r];
  const double act_bytes = tokens_ * dbl(a_.d_model) * bytes_of(p_.precision.compute);
  TaskId cursor = kNoTask;
  if (!last_virtual(sr.stage, op.chunk)) {
    const std::int64_t from = (sr.stage + 1) % p_.pp;
    const int chunk_from = op.chunk + (sr.stage == p_.pp - 1 ? 1 : 0);
    cursor = p2p(r, from, sr.stage, act_bytes, op.microbatch, chunk_from, false, kNoTask);
  }
  const bool fsdp = p_.design == Design::fsdp;
  std::vector<std::int64_t> units;
  if (last_virtual(sr.stage, op.chunk)) units.push_back(a_.num_layers);
  auto layers = chunk_layers(sr.stage, op.chunk);
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) units.push_back(*it);
  if (first_virtual(sr.stage, op.chunk)) units.push_back(-1);
  st.done_bwd.clear();
  span.first = static_cast<TaskId>(out_.graph.size());
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::int64_t u = units[i];
    if (fsdp) cursor = fsdp_materialize(r, units, i, st.done_bwd, op.microbatch, kGatherBwd, cursor);
    if (u == a_.num_layers) cursor = compute(r, StreamKind::compute, PhaseTag::backward, st.edge.head.bwd, op.microbatch, u, "LM head + loss backward", cursor);
    else if (u == -1) cursor = compute(r, StreamKind::compute, PhaseTag::backward, st.edge.embed.bwd, op.microbatch, u, "embedding backward", cursor);
    else emit_layer_backward(r, u, op.microbatch, cursor);
    st.done_bwd[u] = cursor;
    after_layer_backward(r, u, op.microbatch, cursor);
  }
  // The pass's activations are freed when its last compute ends, not when the gradient send does.
  span.last = cursor;
  if (!first_virtual(sr.stage, op.chunk)) {
    const std::int64_t to = (sr.stage + p_.pp - 1) % p_.pp;
    p2p(r, sr.stage, to, act_bytes, op.microbatch, op.chunk, false, cursor);
  }
}

BuiltStep StepBuilder::build() {
  choose_ranks();
  out_.graph = TaskGraph(static_cast<std::uint32_t>(out_.ranks.size()));
  out_.microbatches = m_;
  st_.resize(out_.ranks.size());
  // About a dozen tasks per block and microbatch pass; reserving avoids regrowth.
  out_.graph.reserve(out_.ranks.size() * static_cast<std::size_t>(2 * m_ * (a_.num_layers / p_.pp + 2) * 12 + 64));
  for (std::uint32_t r = 0; r < out_.ranks.size(); ++r) prepare(r);
  for (std::uint32_t r = 0; r < out_.ranks.size(); ++r) {
    for (const PipeOp& op : stage_schedule(p_, out_.ranks[r].stage, m_)) {
      OpSpan span{r, op, kNoTask, kNoTask};
      if (op.forward) emit_forward(r, op, span);
      else emit_backward(r, op, span);
      out_.ops.push_back(span);
    }
    emit_optimizer(r);
  }
  out_.graph.finalize();
  return std::move(out_);
}

}  // namespace detail

std::int64_t simulated_ranks_per_stage(const Architecture& a, const ParallelPlan& p, const SimOptions& o) {
  const bool uneven = a.moe && p.routing.kind != RoutingKind::uniform;
  return o.all_ranks ? p.dp() : (uneven ? p.ep : 1);
}

BuiltStep build_step(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan, const CostBook& costs,
                     const SimOptions& options) {
  return detail::StepBuilder(arch, inv, plan, costs, options).build();
}

}  // namespace moesim
