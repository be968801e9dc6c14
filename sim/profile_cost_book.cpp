#include "sim/profile_cost_book.hpp"

namespace moesim {

ProfileCostBook::ProfileCostBook(const HardwareProfile& hw, const CostModelChoice& c)
    : hw_(hw),
      gemm_(gemm_cost_models().get(c.gemm)),
      grouped_(grouped_gemm_cost_models().get(c.grouped_gemm)),
      attention_(attention_cost_models().get(c.attention)),
      memory_(memory_bound_cost_models().get(c.memory)),
      collective_(collective_models().get(c.collective)) {}

double ProfileCostBook::gemm(double m, double n, double k) const { return gemm_.time(hw_, m, n, k).time_s; }

double ProfileCostBook::grouped_gemm(const std::vector<double>& rows, double n, double k) const {
  return grouped_.time(hw_, rows, n, k).time_s;
}

double ProfileCostBook::attention(double tokens, double seq, double heads, double kv_heads, double head_dim,
                                  bool backward) const {
  AttentionShape shape;
  shape.sequences = tokens / seq;
  shape.seq_len = seq;
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.causal = true;
  const AttentionTime t = attention_.time(hw_, shape);
  return backward ? t.backward.time_s : t.forward.time_s;
}

double ProfileCostBook::memory(double bytes) const { return memory_.time(hw_, bytes).time_s; }

CommCost ProfileCostBook::collective(CollectiveKindTag kind, double bytes, std::int64_t group, std::int64_t per_node) const {
  CollectiveRequest req;
  switch (kind) {
    case CollectiveKindTag::all_reduce: req.kind = CollectiveKind::all_reduce; break;
    case CollectiveKindTag::all_gather: req.kind = CollectiveKind::all_gather; break;
    case CollectiveKindTag::reduce_scatter: req.kind = CollectiveKind::reduce_scatter; break;
    case CollectiveKindTag::all_to_all: req.kind = CollectiveKind::all_to_all; break;
    default: req.kind = CollectiveKind::send_recv; break;
  }
  req.bytes = bytes;
  req.ranks = static_cast<int>(group);
  req.ranks_per_node = static_cast<int>(per_node);
  const CollectiveCost c = collective_.cost(hw_, req);
  return {c.time_s, c.nvlink_bytes_per_rank, c.nic_bytes_per_rank};
}

double ProfileCostBook::compute_slowdown_with_comm() const { return hw_.interference.compute_slowdown_with_comm.value; }

}  // namespace moesim
