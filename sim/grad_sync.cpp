// Parameter-sized work of the two designs: Olmo-core DDP's per-microbatch FP32 accumulation,
// bucketed all-reduce (or reduce-scatter) on the final microbatch, sharded update and weight
// rebuild; FSDP2's per-unit reduce-scatter, HSDP replica all-reduce and sharded update.
#include <algorithm>

#include "sim/step_builder_impl.hpp"

namespace moesim::detail {

namespace {
double dbl(std::int64_t v) { return static_cast<double>(v); }
constexpr int kBucketTag = 100;
constexpr int kOptimizerTag = 200;
}  // namespace

std::vector<Bucket> ddp_buckets(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan) {
  std::vector<Bucket> out;
  const double elem = bytes_of(plan.precision.reduce);
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    const Domain d = it->tensor->cls == TensorClass::routed_expert ? Domain::ep_dp : Domain::dp;
    const bool fits = !out.empty() && out.back().domain == d && (out.back().numel + it->local_numel) * elem <= plan.bucket_cap_bytes;
    if (!fits) out.push_back({0.0, d, it->tensor->layer});
    out.back().numel += it->local_numel;
    out.back().ready_layer = std::min(out.back().ready_layer, it->tensor->layer);
  }
  return out;
}

void StepBuilder::after_layer_backward(std::uint32_t r, std::int64_t layer, int mb, TaskId grads_ready) {
  RankState& st = st_[r];
  const double params = st.params_by_layer.count(layer) ? st.params_by_layer.at(layer) : 0.0;
  const bool final_mb = mb == m_ - 1;
  if (p_.design == Design::fsdp) {
    // Reduce-scatter of the unit's gradients in the reduce dtype (input = full unit), every
    // microbatch; HSDP adds the replica all-reduce of the shard on the final microbatch.
    // FSDP2 first copies the unit's BF16 gradients into one reduce-dtype flat buffer (read 2,
    // write 4 bytes per element) on the reduce-scatter stream, a kernel that shares the SMs.
    const double numel = st.unit_numel.count(layer) ? st.unit_numel.at(layer) : 0.0;
    const double copy_in = c_.memory(numel * (bytes_of(p_.precision.compute) + bytes_of(p_.precision.reduce)));
    const TaskId staged = compute(r, StreamKind::comm_rs, PhaseTag::fsdp_reduce, copy_in, mb, layer, "reduce-scatter copy-in", grads_ready);
    TaskId rs = collective(r, Domain::fsdp_shard, CollectiveKindTag::reduce_scatter, PhaseTag::fsdp_reduce, StreamKind::comm_rs,
                           numel * bytes_of(p_.precision.reduce), mb, layer, 0, staged);
    if (final_mb && p_.shard_group() < p_.dp()) {
      rs = collective(r, Domain::hsdp_replica, CollectiveKindTag::all_reduce, PhaseTag::grad_sync, StreamKind::comm_rs,
                      numel / dbl(p_.shard_group()) * bytes_of(p_.precision.reduce), mb, layer, 1, rs);
    }
    st.sync_tasks.push_back(rs);
    return;
  }
  // DDP: the post-accumulate hook adds each BF16 gradient into its FP32 bucket view (read BF16,
  // read + write FP32) in every microbatch (seed 4.4.1).
  const double acc_bytes = params * (bytes_of(p_.precision.compute) + 2 * bytes_of(p_.precision.grad_accum));
  const TaskId acc = compute(r, StreamKind::compute, PhaseTag::accumulate, c_.memory(acc_bytes), mb, layer, "FP32 grad accumulate", grads_ready);
  if (!final_mb) return;
  // Final microbatch: buckets launch in order as they fill during backward.
  for (std::size_t b = 0; b < st.buckets.size(); ++b) {
    const Bucket& bk = st.buckets[b];
    if (bk.ready_layer != layer) continue;
    const auto kind = p_.grad_sync == GradSync::all_reduce ? CollectiveKindTag::all_reduce : CollectiveKindTag::reduce_scatter;
    st.sync_tasks.push_back(collective(r, bk.domain, kind, PhaseTag::grad_sync, StreamKind::comm_dp, bk.numel * bytes_of(p_.precision.reduce),
                                       mb, static_cast<std::int64_t>(b), kBucketTag, acc));
  }
}

void StepBuilder::emit_optimizer(std::uint32_t r) {
  RankState& st = st_[r];
  const auto& opt = p_.optimizer;
  // Grad-norm for clipping: per-tensor norms, one small all-reduce of their squares.
  const TaskId norm = collective(r, Domain::dp, CollectiveKindTag::all_reduce, PhaseTag::optimizer, StreamKind::comm_dp,
                                 bytes_of(DType::fp32) * 2, -1, -1, kOptimizerTag, kNoTask);
  for (TaskId t : st.sync_tasks) out_.graph.depend(t, norm);
  // The update reads gradient, main weight and states and writes main weight and states.
  const double per_elem = bytes_of(DType::fp32) + 2 * bytes_of(opt.main_weight_dtype) + 2 * opt.states() * bytes_of(opt.state_dtype);
  double local = 0;
  std::map<Domain, double> by_domain;
  for (const auto& [layer, n] : st.params_by_layer) local += n;
  for (const auto& b : st.buckets) by_domain[b.domain] += b.numel;
  const double e = bytes_of(p_.precision.compute);
  if (p_.design == Design::fsdp) {
    compute(r, StreamKind::compute, PhaseTag::optimizer, c_.memory(local / dbl(p_.shard_group()) * per_elem), -1, -1, "sharded update", norm);
    return;
  }
  if (!p_.distributed_optimizer) {
    compute(r, StreamKind::compute, PhaseTag::optimizer, c_.memory(local * (per_elem + bytes_of(opt.main_weight_dtype) + e)), -1, -1,
            "update + cast", norm);
    return;
  }
  double shard = 0;
  for (const auto& [d, n] : by_domain) shard += n / dbl(group_size(d));
  const TaskId update = compute(r, StreamKind::compute, PhaseTag::optimizer, c_.memory(shard * per_elem), -1, -1, "sharded update", norm);
  // Rebuild: cast the updated shard into a pack buffer, one coalesced all-gather per replica
  // group, copy each tensor's slice into place (seed 4.3.1).
  TaskId prev = update;
  for (const auto& [d, n] : by_domain) {
    const double w = dbl(group_size(d));
    if (w <= 1) continue;
    const TaskId pack = compute(r, StreamKind::compute, PhaseTag::weight_rebuild, c_.memory(n / w * (bytes_of(opt.main_weight_dtype) + e)), -1, -1, "pack shard", prev);
    const TaskId ag = collective(r, d, CollectiveKindTag::all_gather, PhaseTag::weight_rebuild, StreamKind::comm_dp, n * e, -1, -1,
                                 kOptimizerTag + 1 + static_cast<int>(d), pack);
    prev = compute(r, StreamKind::compute, PhaseTag::weight_rebuild, c_.memory(2 * n * e), -1, -1, "copy out", ag);
  }
}

}  // namespace moesim::detail
