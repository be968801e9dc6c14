#include "sim/pipeline_schedule.hpp"
#include "sim/schedules/fsdp2_bytes.hpp"

namespace moesim {

namespace {

// What the stage's order (SyncStage::order) makes FSDP2 gather under a pipeline. A block is
// gathered by a forward where the previous pass of its chunk was a forward that resharded it
// (reshard_after_forward) or there was none, and by a backward (not a W part) after such a
// forward; it stays gathered after a backward. The embedding, not gathered for backward, is
// gathered by every forward where it is resharded after forward (untied), else by the first.
struct OrderGathers {
  std::vector<double> blocks;       // per chunk: the gathers of each of its blocks
  std::vector<double> first_waits;  // per chunk: forward passes whose first unit is gathered, but the stage's first
  std::vector<double> first_pass;   // per chunk: 1 where the stage's first pass is its forward and gathers
  std::size_t last_reduced = 0;     // the chunk of the stage's last gradient pass (its REDUCE_GRAD comes last)
};
OrderGathers order_gathers(const SyncStage& s, bool regather, const std::vector<std::int64_t>& first_unit) {
  const auto chunks = static_cast<std::size_t>(s.plan.model_chunks());
  OrderGathers out{std::vector<double>(chunks, 0.0), std::vector<double>(chunks, 0.0), std::vector<double>(chunks, 0.0),
                   0};
  std::vector<bool> gathered(chunks, false), embedding(chunks, false);
  bool first = true;
  for (const PipeOp& op : s.order) {
    const auto c = static_cast<std::size_t>(op.chunk);
    if (op.frees()) out.last_reduced = c;
    if (!op.forward && op.part == BackwardPart::weight) continue;
    const bool gathers = !gathered[c];
    if (gathers) out.blocks[c] += 1;
    if (op.forward) {
      const bool from_embedding = first_unit[c] == -1;
      const bool first_gathers =
          from_embedding ? !embedding[c] : first_unit[c] >= 0 && first_unit[c] < s.arch.num_layers && gathers;
      if (first_gathers) (first ? out.first_pass : out.first_waits)[c] += 1;
      embedding[c] = !(regather && !s.arch.tie_embeddings);
    }
    gathered[c] = !op.forward || !regather;
    first = false;
  }
  return out;
}

}  // namespace

// Under a pipeline: each block gathered as often as the stage's order makes it, the embedding
// and LM head at least once, each gather copied out on the compute stream within the passes; a
// forward pass whose first unit is gathered waits for that gather after the compute stream's
// work so far (the stage's first pass may wait beside its input); each unit reduce-scattered
// once; every gradient pass adds into the accumulators; each chunk's REDUCE_GRAD (copy-in and
// reduce-scatter unit after unit, the compute stream waiting for each) within the passes, but
// the last one's after them, with the sharded update.
SyncBounds fsdp2_pipelined_bounds(const SyncStage& s, const StageUnits& units, bool regather) {
  const std::vector<LayerPlace> places = layer_places(s.plan, s.arch);  // embedding, layers, head
  const auto chunks = static_cast<std::size_t>(s.plan.model_chunks());
  std::vector<std::int64_t> first_unit(chunks, s.arch.num_layers + 1);  // none
  for (std::int64_t unit = s.arch.num_layers; unit >= -1; --unit) {
    const LayerPlace& at = places[static_cast<std::size_t>(unit + 1)];
    if (at.stage == s.stage) first_unit[static_cast<std::size_t>(at.chunk)] = unit;
  }
  const OrderGathers order = order_gathers(s, regather, first_unit);
  SyncBounds out;
  out.compute = unit_shares(s, units, [&](std::int64_t unit) {
    UnitShare x;
    x.gradients = s.costs.memory(accumulate_bytes(s.plan, units.numel[unit], true), MemoryKernel::elementwise);
    return x;
  });
  std::vector<double> reduce_grad(chunks, 0.0);
  double shard = 0;
  for (std::int64_t unit = -1; unit <= s.arch.num_layers; ++unit) {
    const LayerPlace& at = places[static_cast<std::size_t>(unit + 1)];
    if (at.stage != s.stage || !(units.numel[unit] > 0)) continue;
    const auto c = static_cast<std::size_t>(at.chunk);
    const double times = unit >= 0 && unit < s.arch.num_layers ? order.blocks[c] : 1.0;
    out.compute.in_passes += times * s.costs.memory(copy_out_bytes(s.plan, units.numel[unit]), MemoryKernel::copy);
    reduce_grad[c] += s.costs.memory(accumulated_copy_in_bytes(s.plan, units.numel[unit]), MemoryKernel::elementwise);
    double gather = 0;
    for (const ShardPart& part : shard_parts(s.plan, units.numel[unit], units.expert_numel[unit])) {
      const GatherBytes bytes = gather_bytes(s.plan, part);
      const double rs = solo_collective_s(s, CollectiveKind::reduce_scatter,
                                          part.numel * bytes_of(s.plan.precision.reduce), part.communicator);
      const double ag = solo_collective_s(s, CollectiveKind::all_gather, bytes.gathered, part.communicator);
      out.serial_s += rs + times * ag;
      reduce_grad[c] += rs;
      gather +=
          s.costs.memory(bytes.cast, MemoryKernel::elementwise) + s.costs.memory(bytes.staged, MemoryKernel::copy) + ag;
      shard += part.numel / dbl(part.group);
    }
    if (unit == first_unit[c]) {
      out.compute.in_passes += order.first_waits[c] * gather;
      out.compute.at_start += order.first_pass[c] * gather;
    }
  }
  for (std::size_t c = 0; c < chunks; ++c)
    if (c != order.last_reduced) out.compute.in_passes += reduce_grad[c];
  const UpdateTraffic update = update_traffic(s.plan.optimizer, s.plan.precision.grad_accum);
  out.final = {reduce_grad[order.last_reduced] + clip_after_reductions_s(s, shard) +
                   s.costs.memory(shard * update.bytes_per_element, update.kind),
               true};
  return out;
}

}  // namespace moesim
