#include "sim/task_graph.hpp"

namespace moesim {

const char* name_of(StreamKind s) {
  switch (s) {
    case StreamKind::compute: return "compute";
    case StreamKind::side: return "side";
    case StreamKind::copy_in: return "copy_in";
    case StreamKind::comm_dp: return "comm_dp";
    case StreamKind::comm_ep: return "comm_ep";
    case StreamKind::comm_rs: return "comm_rs";
    case StreamKind::comm_replica: return "comm_replica";
    case StreamKind::comm_pp: return "comm_pp";
    case StreamKind::comm_tp: return "comm_tp";
    case StreamKind::comm_cp: return "comm_cp";
    case StreamKind::offload_d2h: return "offload_d2h";
    case StreamKind::offload_h2d: return "offload_h2d";
    case StreamKind::stash: return "paged_stash";
    default: return "?";
  }
}

const char* name_of(PhaseTag p) {
  switch (p) {
    case PhaseTag::forward: return "forward";
    case PhaseTag::backward: return "backward";
    case PhaseTag::recompute: return "recompute";
    case PhaseTag::accumulate: return "grad_accumulate";
    case PhaseTag::optimizer: return "optimizer";
    case PhaseTag::fsdp_gather: return "fsdp_gather";
    case PhaseTag::fsdp_reduce: return "fsdp_reduce_scatter";
    case PhaseTag::grad_sync: return "grad_sync";
    case PhaseTag::weight_rebuild: return "weight_rebuild";
    case PhaseTag::ep_dispatch: return "ep_dispatch";
    case PhaseTag::ep_combine: return "ep_combine";
    case PhaseTag::pp_p2p: return "pp_p2p";
    case PhaseTag::tp_comm: return "tp_comm";
    case PhaseTag::cp_comm: return "cp_comm";
    case PhaseTag::offload: return "offload";
    case PhaseTag::rerun: return "rerun";
    case PhaseTag::paged_stash: return "paged_stash";
    default: return "?";
  }
}

const char* name_of(TaskKind k) {
  switch (k) {
    case TaskKind::compute: return "compute";
    case TaskKind::memory: return "memory_bound";
    case TaskKind::collective: return "collective";
    case TaskKind::p2p: return "p2p";
    case TaskKind::host: return "host";
    case TaskKind::copy: return "host_copy";
    default: return "?";
  }
}

TaskGraph::TaskGraph(std::uint32_t ranks) : ranks_(ranks) {}

std::uint32_t TaskGraph::new_group() { return groups_++; }

void TaskGraph::reset(std::uint32_t ranks) {
  ranks_ = ranks;
  tasks_.clear();
  links_.clear();
  stream_tails_.clear();
  edges_.clear();
  dag_.reset();  // rebuilt by finalize()
  dag_tasks_ = dag_edges_ = 0;
  groups_ = 0;
}

void TaskGraph::reserve(std::size_t tasks) {
  tasks_.reserve(tasks);
  links_.reserve(tasks);
  edges_.reserve(tasks);
}

void TaskGraph::finalize() const {
  if (!dag_ || dag_tasks_ != tasks_.size() || dag_edges_ != edges_.size()) {
    dag_ = std::make_unique<DagStorage>(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(),
                                        static_cast<std::uint32_t>(tasks_.size()));
    dag_tasks_ = tasks_.size();
    dag_edges_ = edges_.size();
  }
}

const DagStorage& TaskGraph::dag() const {
  finalize();
  return *dag_;
}

}  // namespace moesim
