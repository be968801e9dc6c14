// How the plan search spreads its work: over threads in one process, and over processes (MPI
// ranks, `mpirun -np K moesim plan ...`) that each take a contiguous slice of every batch of work
// and then all-gather the results, so that every process holds all of them and takes the same
// next decision. The slices do not change what is computed, only where: the answer is the same
// bytes at any -j and any process count.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim {

struct PlanShare {
  int rank = 0;
  int size = 1;
  // Every process's text, in rank order, on every process (unused when size is 1).
  std::function<std::vector<std::string>(const std::string&)> all_gather;
};

// Runs work(i) for i in [0, count) on `jobs` threads; each i writes only its own slot. The first
// exception thrown is rethrown once every thread stopped.
void parallel_for(std::size_t count, int jobs, const std::function<void(std::size_t)>& work);

// compute(i) for every i in [0, count): this process computes its slice on `jobs` threads, and
// with more than one process the slices travel as JSON (to_json / from_json) to every process.
template <typename Out, typename Compute, typename ToJson, typename FromJson>
std::vector<Out> shared_map(std::size_t count, int jobs, const PlanShare& share, Compute compute, ToJson to_json,
                            FromJson from_json) {
  const auto size = static_cast<std::size_t>(share.size), rank = static_cast<std::size_t>(share.rank);
  const std::size_t first = rank * (count / size) + std::min(rank, count % size);
  const std::size_t mine = count / size + (rank < count % size ? 1 : 0);
  std::vector<Out> out(size == 1 ? count : mine);
  parallel_for(mine, jobs, [&](std::size_t i) { out[i] = compute(first + i); });
  if (size == 1) return out;
  nlohmann::json sent = nlohmann::json::array();
  for (const auto& o : out) sent.push_back(to_json(o));
  std::vector<Out> all;
  all.reserve(count);
  for (const auto& part : share.all_gather(sent.dump()))
    for (const auto& j : nlohmann::json::parse(part)) all.push_back(from_json(j));
  return all;
}

// shared_map over groups of items: compute(g) gives one Out per member of groups[g] (members
// index [0, count), each in one group), and the outputs come back in item order. A group is
// computed in one place, so its members can share work (plan twins: studies/plan_twins.hpp).
template <typename Out, typename Compute, typename ToJson, typename FromJson>
std::vector<Out> shared_group_map(const std::vector<std::vector<std::size_t>>& groups, std::size_t count, int jobs,
                                  const PlanShare& share, Compute compute, ToJson to_json, FromJson from_json) {
  const auto group_json = [&](const std::vector<Out>& outs) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& o : outs) j.push_back(to_json(o));
    return j;
  };
  const auto group_from_json = [&](const nlohmann::json& j) {
    std::vector<Out> outs;
    for (const auto& o : j) outs.push_back(from_json(o));
    return outs;
  };
  std::vector<std::vector<Out>> by_group =
      shared_map<std::vector<Out>>(groups.size(), jobs, share, compute, group_json, group_from_json);
  std::vector<Out> out(count);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k) out[groups[g][k]] = std::move(by_group[g][k]);
  return out;
}

}  // namespace moesim
