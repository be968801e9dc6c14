// The LM head's logits and loss buffers per token, with DeepSeek-V3's multi-token prediction
// modules unwound around them (activations.hpp loss_per_token).
#include "models/common/units.hpp"
#include "models/memory/activations.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

// A buffer's life as events with ids of their own, so that several step lists can be interleaved.
struct BufferEvent {
  bool allocates = true;
  std::size_t id = 0;
  double bytes = 0;
};
struct BufferEvents {
  std::vector<BufferEvent> forward, backward;
};

BufferEvents events_of(const LossBuffers& l, std::size_t& next_id) {
  BufferEvents out;
  std::vector<std::size_t> ids;  // the path's allocations in its own order
  const auto convert = [&](const std::vector<LossBuffers::Step>& steps, std::vector<BufferEvent>& into) {
    for (const auto& st : steps) {
      if (st.frees >= 0) {
        into.push_back({false, ids[static_cast<std::size_t>(st.frees)], 0});
      } else {
        ids.push_back(next_id++);
        into.push_back({true, ids.back(), st.bytes});
      }
    }
  };
  convert(l.forward_steps, out.forward);
  convert(l.backward_steps, out.backward);
  return out;
}

// The events back as steps (each free naming its allocation's index in the new order), with their
// peaks.
LossBuffers steps_of(const std::vector<BufferEvent>& forward, const std::vector<BufferEvent>& backward,
                     std::size_t ids) {
  LossBuffers l;
  std::vector<int> index(ids, -1);  // event id -> allocation index
  int allocated = 0;
  const auto convert = [&](const std::vector<BufferEvent>& events, std::vector<LossBuffers::Step>& into) {
    for (const BufferEvent& ev : events) {
      if (ev.allocates) index[ev.id] = allocated++;
      into.push_back(ev.allocates ? LossBuffers::Step{ev.bytes, -1} : LossBuffers::Step{0, index[ev.id]});
    }
  };
  convert(forward, l.forward_steps);
  convert(backward, l.backward_steps);
  return with_peaks(std::move(l));
}

}  // namespace

LossBuffers loss_per_token(const Architecture& a, const ParallelPlan& plan) {
  // Under TP the logits are vocab-parallel: each rank holds 1/TP of every token's row.
  const double e = bytes_of(plan.precision.compute), d = dbl(a.d_model);
  const LossBuffers main = loss_buffers(plan.loss, {e, d, tp_widths(a, plan).vocab});
  if (a.mtp_layers == 0) return main;
  // Multi-token prediction (DeepSeek-V3 Section 2.2): after the main loss's forward each module
  // saves what its block saves (a block like the last layer's) and its own [2d] concatenation and
  // [d] projection output, then runs the shared head and a loss of its own; backward unwinds the
  // modules before the main loss's backward.
  std::size_t next = 0;
  const BufferEvents head = events_of(main, next);
  std::vector<BufferEvent> forward = head.forward, backward;
  std::vector<std::vector<BufferEvent>> unwinds;
  const RoutedRows routed = routed_rows_per_token(a, plan, 1.0);
  const double saved = saved_per_token(a, a.num_layers - 1, plan, routed).total() + e * 3 * d;
  for (std::int64_t k = 0; k < a.mtp_layers; ++k) {
    const std::size_t block = next++;
    forward.push_back({true, block, saved});
    const BufferEvents loss = events_of(main, next);
    forward.insert(forward.end(), loss.forward.begin(), loss.forward.end());
    std::vector<BufferEvent> unwind = loss.backward;
    unwind.push_back({false, block, 0});
    unwinds.push_back(std::move(unwind));
  }
  for (auto it = unwinds.rbegin(); it != unwinds.rend(); ++it) backward.insert(backward.end(), it->begin(), it->end());
  backward.insert(backward.end(), head.backward.begin(), head.backward.end());
  return steps_of(forward, backward, next);
}

}  // namespace moesim
