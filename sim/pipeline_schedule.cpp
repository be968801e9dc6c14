#include "sim/pipeline_schedule.hpp"

#include <algorithm>

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

}  // namespace

std::int64_t peak_chunks_in_flight(const std::vector<PipeOp>& ops) {
  std::int64_t held = 0, peak = 0;
  for (const PipeOp& op : ops) {
    held += op.forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<std::int64_t> peak_chunk_mix(const std::vector<PipeOp>& ops, std::int64_t chunks) {
  std::vector<std::int64_t> held(static_cast<std::size_t>(chunks), 0), best = held;
  std::int64_t total = 0, peak = 0;
  for (const PipeOp& op : ops) {
    held[static_cast<std::size_t>(op.chunk)] += op.forward ? 1 : -1;
    total += op.forward ? 1 : -1;
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
  return out;
}

std::vector<PipeOp> stage_schedule(const ParallelPlan& plan, std::int64_t stage, std::int64_t m) {
  std::vector<PipeOp> ops;
  const std::int64_t P = plan.pp;
  if (P == 1) {
    for (std::int64_t i = 0; i < m; ++i) {
      ops.push_back({true, static_cast<std::int32_t>(i), 0});
      ops.push_back({false, static_cast<std::int32_t>(i), 0});
    }
    return ops;
  }
  const std::int64_t v = plan.model_chunks();
  const std::int64_t total = m * v;
  // Warm-up forwards before the first backward: P - s - 1 (1F1B); 2(P - s - 1) + (v - 1)P
  // (interleaved).
  const std::int64_t warmup = std::min(total, v == 1 ? P - stage - 1 : 2 * (P - stage - 1) + (v - 1) * P);
  std::int64_t f = 0, b = 0;
  auto fwd = [&] { ops.push_back(interleaved_op(f++, P, v, true)); };
  auto bwd = [&] { ops.push_back(interleaved_op(b++, P, v, false)); };
  for (std::int64_t i = 0; i < warmup; ++i) fwd();
  while (f < total) {
    fwd();
    bwd();
  }
  while (b < total) bwd();
  return ops;
}

}  // namespace moesim
