// The plan search's memory frontier: the replayed plans that fit and that no other such plan beats
// with as little memory or less. By peak reserved memory ascending (on a tie the faster first,
// then the earlier candidate), each such plan that raises the best tokens/s/GPU so far.
#pragma once

#include <cstddef>
#include <vector>

#include "studies/plan_record.hpp"

namespace moesim {

// Record indices, by memory ascending.
std::vector<std::size_t> memory_frontier(const std::vector<PlanRecord>& records);

}  // namespace moesim
