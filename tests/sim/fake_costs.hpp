// A cost book with round numbers, so that golden timelines can be worked out by hand: every
// kernel of a kind takes the same time, whatever its shape or bytes.
#pragma once

#include "models/costs/cost_book.hpp"

namespace moesim::test {

struct FakeCosts final : CostBook {
  double gemm_s = 1e-3;        // every GEMM
  double grouped_s = 2e-3;     // every grouped GEMM
  double collective_s = 3e-3;  // every collective (group > 1)
  double attention_s = 0;      // every flash-attention call (forward or backward)
  double scan_s = 0;           // every Mamba-2 SSD scan (forward or backward)
  double memory_s = 0;         // every memory-bound kernel
  double host_s = 0;           // the host's share of a step
  double host_copy_Bps = 1e9;  // copies to and from host memory (activation offload), bytes/s
  double free_dimension = 0;   // GEMMs with a side of this size cost nothing (0: none), e.g. an LM head
  double gemm(const GemmShape& s) const override {
    const bool free = free_dimension > 0 && (s.m == free_dimension || s.n == free_dimension || s.k == free_dimension);
    return free ? 0.0 : gemm_s;
  }
  double grouped_gemm(const GroupedGemmShape&) const override { return grouped_s; }
  double attention(const AttentionShape&, bool) const override { return attention_s; }
  double scan(const ScanShape&, bool) const override { return scan_s; }
  double memory(double, MemoryKernel) const override { return memory_s; }
  double step_host_s() const override { return host_s; }
  double host_copy_s(double bytes) const override { return bytes / host_copy_Bps; }
  CommCost collective(const CollectiveRequest& request) const override {
    return request.ranks > 1 ? CommCost{collective_s, request.bytes, 0} : CommCost{};
  }
};

}  // namespace moesim::test
