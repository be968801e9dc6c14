// The kernel and collective times a schedule builder needs, behind one interface: the
// profile-backed implementation uses the registered cost models; tests use hand-set ones.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/task_graph.hpp"

namespace moesim {

struct CommCost {
  double time_s = 0;
  double nvlink_bytes = 0;  // per rank
  double nic_bytes = 0;     // per rank
};

class CostBook {
 public:
  virtual ~CostBook() = default;
  virtual double gemm(double m, double n, double k) const = 0;  // BF16 [m,k] x [k,n]
  virtual double grouped_gemm(const std::vector<double>& rows, double n, double k) const = 0;
  virtual double attention(double tokens, double seq, double heads, double kv_heads, double head_dim, bool backward) const = 0;
  virtual double memory(double bytes) const = 0;
  // bytes in nccl-tests convention (all_gather: output, reduce_scatter: input, all_to_all:
  // total send buffer); `per_node`: group members inside one node.
  virtual CommCost collective(CollectiveKindTag kind, double bytes, std::int64_t group, std::int64_t per_node) const = 0;
  virtual double compute_slowdown_with_comm() const = 0;
};

}  // namespace moesim
