#include "sim/step_emitter.hpp"

#include <array>
#include <string>

namespace moesim {

StepEmitter::StepEmitter(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, BuiltStep& step)
    : arch_(arch), plan_(plan), costs_(costs), step_(step) {}

TaskId StepEmitter::last_on(std::uint32_t rank, StreamKind stream) const { return step_.graph.last_on(rank, stream); }

namespace {

// "<phase> <collective>", the trace name of a collective; built once for every pair, so the
// text outlives every graph.
const char* collective_label(PhaseTag phase, CollectiveKind kind) {
  static const auto names = [] {
    std::array<std::array<std::string, kCollectiveKinds>, static_cast<std::size_t>(PhaseTag::count)> t;
    for (std::size_t p = 0; p < t.size(); ++p) {
      for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
        t[p][k] =
            std::string(name_of(static_cast<PhaseTag>(p))) + " " + std::string(name_of(static_cast<CollectiveKind>(k)));
      }
    }
    return t;
  }();
  return names[static_cast<std::size_t>(phase)][static_cast<std::size_t>(kind)].c_str();
}

}  // namespace

void StepEmitter::place(Task& t, const TaskPlace& at, TaskKind kind, double work_s) const {
  t.rank = at.rank;
  t.stream = at.stream;
  t.kind = kind;
  t.phase = first_try_ ? PhaseTag::rerun : at.phase;
  t.work_s = work_s;
  t.microbatch = at.microbatch;
  t.layer = static_cast<std::int32_t>(at.layer);
}

TaskId StepEmitter::kernel(const TaskPlace& at, TaskKind kind, double work_s, const char* what, TaskId after,
                           TaskId also_after) {
  return add(
      [&](Task& t) {
        place(t, at, kind, work_s);
        t.label = what;
      },
      after, also_after);
}

TaskId StepEmitter::memory_kernel(const TaskPlace& at, double bytes, MemoryKernel kind, const char* what, TaskId after,
                                  TaskId also_after) {
  return kernel(at, TaskKind::memory, costs_.memory(bytes, kind), what, after, also_after);
}

CollectiveRequest collective_request(CollectiveKind kind, double bytes, const CommunicatorShape& shape) {
  CollectiveRequest request;
  request.kind = kind;
  request.bytes = bytes;
  request.ranks = static_cast<int>(shape.ranks);
  request.ranks_per_node = static_cast<int>(shape.ranks_per_node);
  return request;
}

const CommCost& StepEmitter::priced_ep_transfer(double bytes, bool toward_experts) {
  // Consecutive calls mostly move the same bytes (every layer's dispatch and combine): the last
  // answer is checked before the map (its nodes never move).
  const EpPriceKey key{bytes, toward_experts};
  if (last_ep_price_ != nullptr && last_ep_price_->first == key) return last_ep_price_->second;
  auto it = ep_prices_.find(key);
  if (it == ep_prices_.end()) {
    it = ep_prices_
             .emplace(key,
                      costs_.ep_transfer(plan_.ep_transport, ep_transfer_request(arch_, plan_, bytes, toward_experts)))
             .first;
  }
  last_ep_price_ = &*it;
  return it->second;
}

const CommCost& StepEmitter::priced(CollectiveKind kind, double bytes, const CommunicatorShape& shape) {
  const auto key = std::make_tuple(kind, bytes, shape.ranks, shape.ranks_per_node);
  auto it = prices_.find(key);
  if (it == prices_.end()) {
    it = prices_.emplace(key, costs_.collective(collective_request(kind, bytes, shape))).first;
  }
  return it->second;
}

void StepEmitter::place_communication(Task& t, const TaskPlace& at, TaskKind kind, CollectiveKind coll,
                                      const CommCost& cost, std::uint32_t group) const {
  place(t, at, kind, cost.time_s);
  t.coll = coll;
  t.link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] = cost.nvlink_bytes;
  t.link_bytes[static_cast<std::size_t>(LinkClass::nic)] = cost.nic_bytes;
  t.nvlink_relay_bytes = cost.nvlink_relay_bytes;
  t.group = group;
  t.sm_ctas = static_cast<std::uint16_t>(cost.ctas);
}

TaskId StepEmitter::collective(const TaskPlace& at, const CollectiveCall& call, TaskId after) {
  // Groups match the members of one call across simulated ranks of one stage (the key names the
  // stage); with one simulated rank per stage each call has one member, runs as a task of no
  // group, and the key is neither built nor looked up (a 4096-GPU pipeline step would otherwise
  // hash ~16,000 keys that never match).
  std::uint32_t group = kNoGroup;
  if (step_.ranks.size() != static_cast<std::size_t>(plan_.pp)) {
    const SimRank& rank = step_.ranks[at.rank];
    const CollectiveKey key{call.communicator, rank.stage,    communicator_instance(plan_, rank, call.communicator),
                            call.purpose,      at.microbatch, static_cast<std::int32_t>(at.layer),
                            call.bucket,       first_try_};
    group = collective_groups_.find_or_add(key, [&] { return step_.graph.new_group(); });
  }
  const CommCost& cost = call.communicator == Communicator::ep_mp
                             ? priced_ep_transfer(call.bytes, call.kind != CollectiveKind::reduce_scatter)
                             : priced(call.kind, call.bytes, communicator_shape(plan_, call.communicator));
  return add(
      [&](Task& t) {
        place_communication(t, at, TaskKind::collective, call.kind, cost, group);
        t.label = collective_label(at.phase, call.kind);
      },
      after);
}

TaskId StepEmitter::transfer(std::uint32_t rank, const TransferKey& named, double bytes, TaskId after) {
  TransferKey key = named;
  key.first_try = first_try_;
  const std::uint32_t group = transfer_groups_.find_or_add(key, [&] { return step_.graph.new_group(); });
  const CommCost& cost =
      priced(CollectiveKind::send_recv, bytes, communicator_shape(plan_, Communicator::pp_neighbours));
  return add(
      [&](Task& t) {
        place_communication(t, {rank, StreamKind::comm_pp, PhaseTag::pp_p2p, key.microbatch, -1}, TaskKind::p2p,
                            CollectiveKind::send_recv, cost, group);
        t.label = key.gradients ? "activation grads p2p" : "activations p2p";
      },
      after);
}

}  // namespace moesim
