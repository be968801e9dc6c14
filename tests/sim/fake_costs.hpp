// A cost book with round numbers, so that golden timelines can be worked out by hand.
#pragma once

#include "sim/cost_book.hpp"

namespace moesim::test {

struct FakeCosts final : CostBook {
  double gemm_s = 1e-3;        // every GEMM
  double grouped_s = 2e-3;     // every grouped GEMM
  double collective_s = 3e-3;  // every collective (group > 1)
  double slowdown = 0;
  double gemm(double, double, double) const override { return gemm_s; }
  double grouped_gemm(const std::vector<double>&, double, double) const override { return grouped_s; }
  double attention(double, double, double, double, double, bool) const override { return 0; }
  double memory(double) const override { return 0; }
  CommCost collective(CollectiveKindTag, double bytes, std::int64_t group, std::int64_t) const override {
    return group > 1 ? CommCost{collective_s, bytes, 0} : CommCost{};
  }
  double compute_slowdown_with_comm() const override { return slowdown; }
};

}  // namespace moesim::test
