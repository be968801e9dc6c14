// The training step as a task DAG: compute kernels, memory-bound kernels, collectives and
// point-to-point transfers placed on per-rank streams. Edges are data/control dependencies;
// tasks on one (rank, stream) also run in insertion order, as on a CUDA stream.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "models/common/cost_types.hpp"

namespace moesim {

// CUDA streams of one rank:
//   compute       the main stream (forward, backward, copy-outs, optimizer)
//   side          the shared expert beside the routed ones
//   copy_in       FSDP2's all-gather copy-in stream
//   comm_dp       the data-parallel communicator: DDP buckets and rebuild; FSDP2's all-gathers and
//                 reduce-scatters, which share one NCCL communicator and so run in issue order
//   comm_ep       EP dispatch and combine
//   comm_rs       FSDP2's reduce-scatter stream work after the collective (gradient accumulation)
//   comm_replica  HSDP's replica all-reduce (its own communicator)
//   comm_pp       point-to-point transfers, which NCCL batches per peer: they keep no stream order
//                 (only their explicit dependencies), so sends and receives cannot deadlock.
enum class StreamKind : std::uint8_t {
  compute,
  side,
  copy_in,
  comm_dp,
  comm_ep,
  comm_rs,
  comm_replica,
  comm_pp,
  comm_tp,      // tensor-parallel collectives (the compute stream waits for each)
  comm_cp,      // context-parallel exchanges (a ring's passes beside the attention)
  offload_d2h,  // activation offload: saved tensors copied to pinned host memory
  offload_h2d,  // and back before the backward
  stash,        // the paged stash's copies into its pages and back (one pack and unpack stream)
  count
};
inline bool stream_is_ordered(StreamKind s) { return s != StreamKind::comm_pp; }
// compute: GEMMs, attention and the fused blocks around them; memory: kernels bound by HBM
// traffic alone (copies, accumulation, optimizer update, embedding); collective and p2p:
// communication kernels; host: time the GPU waits for the host, using no GPU resource.
// copy: a DMA copy between the GPU and host memory (the copy engines: no SMs).
enum class TaskKind : std::uint8_t { compute, memory, collective, p2p, host, copy, count };
inline constexpr std::size_t kTaskKinds = static_cast<std::size_t>(TaskKind::count);
// What a task is for: the replay attributes exposed time to these.
enum class PhaseTag : std::uint8_t {
  forward,
  backward,
  recompute,
  accumulate,
  optimizer,  // compute stream
  fsdp_gather,
  fsdp_reduce,
  grad_sync,
  weight_rebuild,  // parameter-sized communication
  ep_dispatch,
  ep_combine,
  pp_p2p,
  tp_comm,      // tensor-parallel all-reduces, all-gathers and reduce-scatters of activations
  cp_comm,      // context-parallel K/V passes or all-to-alls
  offload,      // activation offload's copies to and from host memory
  rerun,        // the first try of a step the sync-free MoE path runs again (models/plan/sync_free.hpp)
  paged_stash,  // the paged stash's copies of the routed experts' saved tensors (sim/paged_stash_copies.hpp)
  count
};
// Link classes for bandwidth sharing and per-rank byte ledgers.
enum class LinkClass : std::uint8_t { nvlink, nic, count };
inline constexpr std::size_t kLinkClasses = static_cast<std::size_t>(LinkClass::count);

const char* name_of(StreamKind s);
const char* name_of(PhaseTag p);
const char* name_of(TaskKind k);
inline bool is_communication(TaskKind k) { return k == TaskKind::collective || k == TaskKind::p2p; }

using TaskId = std::uint32_t;
inline constexpr TaskId kNoTask = 0xffffffffu;          // "no such task" (no dependency, no cause)
inline constexpr std::uint32_t kNoGroup = 0xffffffffu;  // a task that is no collective's member

struct Task {
  std::uint32_t rank = 0;  // simulated rank index
  StreamKind stream = StreamKind::compute;
  TaskKind kind = TaskKind::compute;
  PhaseTag phase = PhaseTag::forward;
  CollectiveKind coll = CollectiveKind::all_reduce;  // meaningful for collective and p2p tasks only
  double work_s = 0;                                 // duration alone, at full rate
  double link_bytes[kLinkClasses] = {0, 0};          // bytes this rank moves over nvlink / nic (for ledgers)
  std::uint16_t sm_ctas = 0;                         // communication: NCCL CTAs it holds (one SM each)
  std::uint32_t group = kNoGroup;                    // collective instance: members start together, end together
  const char* label = "";                            // trace name (text of static lifetime)
  std::int32_t microbatch = -1;
  std::int32_t layer = -1;
  // Of link_bytes[nvlink]: other ranks' cross-rail rows this rank relays for NCCL's PXN. A transfer
  // with relay bytes holds NVLink as well as its NIC (resource_sharing.hpp).
  double nvlink_relay_bytes = 0;
};

// Compressed sparse rows: the DAG is built once and only read, so two flat arrays hold it.
using DagStorage = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                      boost::no_property, std::uint32_t, std::uint32_t>;

class TaskGraph {
 public:
  explicit TaskGraph(std::uint32_t ranks);
  void reserve(std::size_t tasks);
  // Empties the graph for `ranks` ranks, keeping its buffers: a sweep thread's next step is written
  // over the memory (already mapped and cached) of its last.
  void reset(std::uint32_t ranks);

  // Inline: the step builder calls them several times per task. Each keeps, as it goes, what
  // a replay needs before it starts: every task's count of dependencies (edges and the stream
  // order) and the next task on its ordered stream.
  TaskId add(const Task& t) {
    return add_filled([&t](Task& slot) { slot = t; });
  }
  // The first task on `stream` from `from` on (kNoTask: none): where a pass starts saving
  // activations on the compute stream (the FSDP gathers before it may run ahead on their own).
  TaskId first_on(StreamKind stream, TaskId from) const {
    for (TaskId id = from; id < tasks_.size(); ++id) {
      if (tasks_[id].stream == stream) return id;
    }
    return kNoTask;
  }
  // Appends a task that `fill` writes in place, then orders it on its stream as add() does. The
  // step builder's way: a task built field by field on the stack and then copied is read back
  // with wide loads of fields just stored narrow, which the store buffer cannot forward (that
  // stall took ~60% of the old copying add's samples, perf with cpu-clock, Figure 8 FSDP point).
  template <class Fill>
  TaskId add_filled(Fill&& fill) {
    const auto id = static_cast<TaskId>(tasks_.size());
    Task& t = tasks_.emplace_back();
    fill(t);
    links_.push_back({0, kNoTask});
    const std::size_t slot = stream_slot(t.rank, t.stream);
    if (slot >= stream_tails_.size()) stream_tails_.resize(slot + 1, kNoTask);
    const TaskId previous = stream_tails_[slot];
    if (previous != kNoTask && stream_is_ordered(t.stream)) {
      links_[previous].stream_next = id;
      ++links_[id].waits;
    }
    stream_tails_[slot] = id;
    return id;
  }
  void depend(TaskId before, TaskId after) {  // `after` starts only once `before` finished
    if (before == kNoTask || after == kNoTask) return;
    edges_.emplace_back(before, after);
    ++links_[after].waits;
  }
  // What a task waits for before it can start: its edges' sources and its stream predecessor.
  std::uint32_t waits(TaskId id) const { return links_[id].waits; }
  // The task after `id` on its ordered stream (kNoTask: none, or a stream without order).
  TaskId stream_next(TaskId id) const { return links_[id].stream_next; }
  // The last task added to `rank`'s `stream` so far (kNoTask: none).
  TaskId last_on(std::uint32_t rank, StreamKind stream) const {
    const std::size_t slot = stream_slot(rank, stream);
    return slot < stream_tails_.size() ? stream_tails_[slot] : kNoTask;
  }
  // Builds the Boost.Graph adjacency list from the recorded edges in one pass (far cheaper
  // than growing it edge by edge). dag() does it on first use too.
  void finalize() const;
  // A collective or transfer spanning several simulated ranks: the tasks start together once
  // all are ready, and finish together when the slowest member finishes.
  std::uint32_t new_group();

  std::uint32_t ranks() const { return ranks_; }
  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskId id) const { return tasks_[id]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const DagStorage& dag() const;
  std::uint32_t groups() const { return groups_; }

 private:
  static std::size_t stream_slot(std::uint32_t rank, StreamKind stream) {
    return static_cast<std::size_t>(rank) * static_cast<std::size_t>(StreamKind::count) +
           static_cast<std::size_t>(stream);
  }

  std::uint32_t ranks_;
  std::vector<Task> tasks_;
  struct Links {
    std::uint32_t waits;  // dependencies: edges in, and the stream predecessor
    TaskId stream_next;
  };
  std::vector<Links> links_;          // per task
  std::vector<TaskId> stream_tails_;  // [rank][stream]: the last task added to each stream
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  // Built from edges_ on first use (logically const); held by pointer because Boost's
  // graphs copy on move. Rebuilt when tasks or edges were added since (the sizes it was built at
  // tell, so that adding, several times per task, need not reset it).
  mutable std::unique_ptr<DagStorage> dag_;
  mutable std::size_t dag_tasks_ = 0, dag_edges_ = 0;
  std::uint32_t groups_ = 0;
};

}  // namespace moesim
