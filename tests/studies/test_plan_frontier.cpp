// The plan search's memory frontier (studies/plan_frontier.cpp), which the plan document carries
// and the plan page draws: replayed plans that fit, by memory, each raising the best throughput.
#include <catch2/catch.hpp>

#include "studies/plan_frontier.hpp"

using namespace moesim;

namespace {
PlanRecord record(std::size_t candidate, double GiB, double tokens_per_s, bool fits = true,
                  PlanStatus status = PlanStatus::replayed) {
  PlanRecord r;
  r.candidate = candidate;
  r.peak_reserved_GiB = GiB;
  r.tokens_per_s_per_gpu = tokens_per_s;
  r.fits = fits;
  r.status = status;
  return r;
}

std::vector<std::size_t> candidates(const std::vector<PlanRecord>& records) {
  std::vector<std::size_t> out;
  for (const std::size_t i : memory_frontier(records)) out.push_back(records[i].candidate);
  return out;
}
}  // namespace

TEST_CASE("the frontier keeps each plan that beats every plan with as little memory", "[unit]") {
  // The plan page's sample: fsdp (134.0 GiB, 35,324), ddp+ep8 (138.5, 53,200), then two plans
  // that need more memory for less.
  std::vector<PlanRecord> r = {record(0, 134.0, 35324), record(15, 138.5, 53200), record(21, 160.1, 53020),
                               record(13, 183.0, 41000)};
  CHECK(candidates(r) == std::vector<std::size_t>{0, 15});
  // A plan faster than all but over capacity, and one pruned before its replay, are off it.
  r.push_back(record(30, 170.0, 60000, false));
  r.push_back(record(31, 100.0, 90000, true, PlanStatus::pruned_by_bound));
  CHECK(candidates(r) == std::vector<std::size_t>{0, 15});
  // A tie on memory: the faster stands for it.
  r[0].peak_reserved_GiB = 138.5;
  CHECK(candidates(r) == std::vector<std::size_t>{15});
  CHECK(memory_frontier({}).empty());
}
