#include "sim/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace moesim {

namespace {

// k-th forward (or backward) pass of a stage in Megatron-LM's interleaved order: microbatches go
// in groups of P through chunk 0, then the same group through chunk 1, ...; backward walks the
// chunks in reverse.
PipeOp interleaved_op(std::int64_t k, std::int64_t P, std::int64_t v, bool forward) {
  const std::int64_t in_group = k % (P * v);
  std::int64_t chunk = in_group / P;
  if (!forward) chunk = v - 1 - chunk;
  const std::int64_t mb = (k / (P * v)) * P + k % P;
  return {forward, static_cast<std::int32_t>(mb), static_cast<std::int32_t>(chunk)};
}

// 1F1B and interleaved 1F1B: warm-up forwards, then one forward and one whole backward in turn,
// then the remaining backwards. With the EP all-to-all overlap (`fused`) one more warm-up forward
// and each steady-state forward fused with the backward after it (schedules.py
// get_schedule_table's extra micro-batch; combined_1f1b.py).
std::vector<PipeOp> one_f_one_b_order(std::int64_t P, std::int64_t v, std::int64_t stage, std::int64_t m, bool fused) {
  std::vector<PipeOp> ops;
  const std::int64_t total = m * v;
  // Warm-up forwards before the first backward: P - s - 1 (1F1B); 2(P - s - 1) + (v - 1)P
  // (interleaved).
  const std::int64_t warmup =
      std::min(total, (v == 1 ? P - stage - 1 : 2 * (P - stage - 1) + (v - 1) * P) + (fused ? 1 : 0));
  std::int64_t f = 0, b = 0;
  auto fwd = [&] { ops.push_back(interleaved_op(f++, P, v, true)); };
  auto bwd = [&] { ops.push_back(interleaved_op(b++, P, v, false)); };
  for (std::int64_t i = 0; i < warmup; ++i) fwd();
  while (f < total) {
    fwd();
    ops.back().fused_with_next = fused;
    bwd();
  }
  while (b < total) bwd();
  return ops;
}

// Zero Bubble H1 (Qi et al. 2023, arXiv 2401.10241, Section 3.1, Figure 3): 1F1B's warm-up of
// P - s - 1 forwards, then F, B and W in turn, except that stage s keeps its W passes s
// microbatches behind its B passes and runs the ones it held back at the end, where 1F1B would
// idle while the last input gradients travel back to stage 0. The bubble shrinks from
// (P-1)(F+B+W) to (P-1)(F+B-W) per stage; held until W, every stage keeps P microbatches: the
// largest stage's count under 1F1B.
std::vector<PipeOp> zb_h1_order(std::int64_t P, std::int64_t stage, std::int64_t m) {
  std::vector<PipeOp> ops;
  const auto as_mb = [](std::int64_t k) { return static_cast<std::int32_t>(k); };
  std::int64_t f = 0, b = 0, w = 0;
  for (const std::int64_t warmup = std::min(m, P - stage - 1); f < warmup; ++f) ops.push_back({true, as_mb(f), 0});
  while (b < m) {
    if (f < m) ops.push_back({true, as_mb(f++), 0});
    ops.push_back({false, as_mb(b++), 0, BackwardPart::input});
    if (b - w > stage) ops.push_back({false, as_mb(w++), 0, BackwardPart::weight});
  }
  while (w < m) ops.push_back({false, as_mb(w++), 0, BackwardPart::weight});
  return ops;
}

// The V-shape orders, chunk 0 holding layer block s and chunk 1 block 2P-1-s
// (torch/distributed/pipelining/schedules.py ScheduleZBVZeroBubble._calculate_single_rank_operations,
// whose phases these are; 1F1B-V runs each B/W pair as one whole backward at the B's place):
// - warm-up: 2(P - s) - 1 forwards of chunk 0, then s times a forward of chunk 1 and one of
//   chunk 0, then P - s times a forward, B and W of chunk 1: stage s holds 2P chunk passes, a
//   microbatch's worth of activations P times, on every stage;
// - steady: forward (while microbatches remain), B and W of chunk 0, then the same of chunk 1;
// - cool-down: s times the B of chunk 0 and of chunk 1, P - s times B and W of chunk 0, then the
//   W passes still owed, chunk 1's first.
// The order is laid out for at least 2P - 1 microbatches and the passes of the missing ones
// dropped, as torch does, so any m >= 1 works.
std::vector<PipeOp> v_shape_order(std::int64_t P, std::int64_t stage, std::int64_t m, bool split) {
  std::vector<PipeOp> ops;
  const std::int64_t n = std::max(2 * P - 1, m);
  std::int64_t f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
  const auto push = [&](bool forward, std::int64_t mb, std::int32_t chunk, BackwardPart part) {
    if (mb < m) ops.push_back({forward, static_cast<std::int32_t>(mb), chunk, part});
  };
  const auto F = [&](std::int32_t c) { push(true, f[c]++, c, BackwardPart::whole); };
  const auto B = [&](std::int32_t c) { push(false, b[c]++, c, split ? BackwardPart::input : BackwardPart::whole); };
  const auto W = [&](std::int32_t c) {
    const std::int64_t mb = w[c]++;
    if (split) push(false, mb, c, BackwardPart::weight);
  };
  for (std::int64_t i = 0; i < 2 * (P - stage) - 1; ++i) F(0);
  for (std::int64_t i = 0; i < stage; ++i) {
    F(1);
    F(0);
  }
  const auto one_f_one_b_one_w = [&](std::int32_t c) {
    F(c);
    B(c);
    W(c);
  };
  for (std::int64_t i = 0; i < P - stage; ++i) one_f_one_b_one_w(1);
  while (f[1] < f[0] || f[0] < n) {
    if (f[0] < n) F(0);
    B(0);
    W(0);
    one_f_one_b_one_w(1);
  }
  for (std::int64_t i = 0; i < stage; ++i) {
    B(0);
    B(1);
  }
  for (std::int64_t i = 0; i < P - stage; ++i) {
    B(0);
    W(0);
  }
  while (w[1] < b[1]) W(1);
  while (w[0] < b[0]) W(0);
  return ops;
}

}  // namespace

std::int64_t peak_chunks_in_flight(const std::vector<PipeOp>& ops) {
  std::int64_t held = 0, peak = 0;
  for (const PipeOp& op : ops) {
    held += op.held_change();
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<std::int64_t> peak_chunk_mix(const std::vector<PipeOp>& ops, std::int64_t chunks) {
  std::vector<std::int64_t> held(static_cast<std::size_t>(chunks), 0), best = held;
  std::int64_t total = 0, peak = 0;
  for (const PipeOp& op : ops) {
    held[static_cast<std::size_t>(op.chunk)] += op.held_change();
    total += op.held_change();
    if (total > peak) {
      peak = total;
      best = held;
    }
  }
  return best;
}

InFlight schedule_in_flight(const ParallelPlan& plan, std::int64_t microbatches) {
  InFlight out;
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    out.chunks.push_back(peak_chunk_mix(stage_schedule(plan, stage, microbatches), plan.model_chunks()));
  }
  out.source = "the pipeline schedule's pass order on each stage";
  out.replay = allocation_replay(stage_pass_orders(plan, microbatches));
  return out;
}

std::vector<std::vector<StagePass>> stage_pass_orders(const ParallelPlan& plan, std::int64_t microbatches) {
  std::vector<std::vector<StagePass>> out;
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    auto& passes = out.emplace_back();
    for (const PipeOp& op : stage_schedule(plan, stage, microbatches)) {
      passes.push_back({op.microbatch, op.chunk, op.forward, op.forward || op.part != BackwardPart::weight,
                        op.forward || op.part != BackwardPart::input, op.frees()});
    }
  }
  return out;
}

namespace {

std::vector<PipeOp> schedule_order(PipelineSchedule schedule, std::int64_t P, std::int64_t chunks, std::int64_t stage,
                                   std::int64_t m, bool fused) {
  // No pipeline: every schedule is plain gradient accumulation, which the EP all-to-all overlap
  // runs as 1F1B on one stage (combined_1f1b_schedule_for_no_pipelining: forward 0, then forward
  // i + 1 fused with backward i).
  if (P == 1) return one_f_one_b_order(1, 1, 0, m, fused);
  switch (schedule) {
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::interleaved_1f1b: return one_f_one_b_order(P, chunks, stage, m, fused);
    case PipelineSchedule::zb_h1: return zb_h1_order(P, stage, m);
    case PipelineSchedule::one_f_one_b_v: return v_shape_order(P, stage, m, false);
    case PipelineSchedule::zbv: return v_shape_order(P, stage, m, true);
  }
  return {};
}

}  // namespace

std::vector<PipeOp> stage_schedule(const ParallelPlan& plan, std::int64_t stage, std::int64_t m) {
  const bool fused = plan.ep_a2a_overlap && plan.ep > 1;
  // A stage's order depends on these numbers only; the ledger, the allocation replay and the
  // step bound each ask for it, and a plan search's candidates share most of them, so each
  // thread keeps the orders it made, forgotten all at once past kKeptOps passes in all (about
  // 48 MB: one order of a 1,024-microbatch, 8-chunk stage holds 16,384).
  using Key = std::tuple<PipelineSchedule, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>;
  constexpr std::size_t kKeptOps = std::size_t{1} << 22;
  thread_local std::map<Key, std::vector<PipeOp>> kept;
  thread_local std::size_t kept_ops = 0;
  const Key key{
      plan.pp == 1 ? PipelineSchedule::one_f_one_b : plan.pp_schedule, plan.pp, plan.model_chunks(), stage, m, fused};
  if (const auto it = kept.find(key); it != kept.end()) return it->second;
  std::vector<PipeOp> order = schedule_order(plan.pp_schedule, plan.pp, plan.model_chunks(), stage, m, fused);
  if (kept_ops + order.size() > kKeptOps) {
    kept.clear();
    kept_ops = 0;
  }
  kept_ops += order.size();
  kept.emplace(key, order);
  return order;
}

}  // namespace moesim
