#include "models/costs/profile_cost_book.hpp"

#include <stdexcept>

#include "models/common/registry.hpp"
#include "models/common/suggest.hpp"
#include "models/costs/ep_transports.hpp"

namespace moesim {

ProfileCostBook::ProfileCostBook(const HardwareProfile& hw, const CostModelChoice& choice)
    : hw_(hw),
      gemm_(gemm_cost_models().get(choice.gemm)),
      grouped_(grouped_gemm_cost_models().get(choice.grouped_gemm)),
      attention_(attention_cost_models().get(choice.attention)),
      memory_(memory_bound_cost_models().get(choice.memory)),
      collective_(collective_models().get(choice.collective)) {}

double ProfileCostBook::gemm(const GemmShape& shape) const { return gemm_.time(hw_, shape).time_s; }

double ProfileCostBook::grouped_gemm(const GroupedGemmShape& shape) const { return grouped_.time(hw_, shape).time_s; }

double ProfileCostBook::attention(const AttentionShape& shape, bool backward) const {
  const AttentionTime t = attention_.time(hw_, shape);
  return backward ? t.backward.time_s : t.forward.time_s;
}

double ProfileCostBook::scan(const ScanShape& shape, bool backward) const {
  const AttentionTime t = attention_.scan(hw_, shape);
  return backward ? t.backward.time_s : t.forward.time_s;
}

double ProfileCostBook::memory(double bytes, MemoryKernel kind) const { return memory_.time(hw_, bytes, kind).time_s; }

namespace {
// Prices kept per book: a linear search over this many beats the model's own search; past it the
// newest are priced afresh.
constexpr std::size_t kKeptPrices = 64;
}  // namespace

CommCost ProfileCostBook::collective(const CollectiveRequest& request) const {
  for (const PricedCollective& p : priced_)
    if (p.request == request) return p.cost;  // every field alike
  const CollectiveCost c = collective_.cost(hw_, request);
  const CommCost cost{c.time_s, c.nvlink_bytes_per_rank, c.nic_bytes_per_rank, c.ctas, c.nvlink_relay_bytes_per_rank};
  if (priced_.size() < kKeptPrices) priced_.push_back({request, cost});
  return cost;
}

CommCost ProfileCostBook::ep_transfer(EpTransport transport, const EpTransferRequest& request) const {
  const EpTransferCost c = ep_transport_model(transport).cost(hw_, collective_, request);
  return {c.time_s, c.nvlink_bytes, c.nic_bytes, c.ctas, c.nvlink_relay_bytes};
}

double ProfileCostBook::step_host_s() const { return hw_.host.step_overhead_us.value * 1e-6; }

// At the host link's sustained rate (node.host_link_GBps_per_direction; a plan that offloads on a
// profile without it is refused at compose, plan_profile_checks.cpp).
double ProfileCostBook::host_copy_s(double bytes) const {
  if (!hw_.node.host_link_GBps_per_direction)
    throw std::logic_error("host copy priced on hardware profile \"" + hw_.name +
                           "\" without node.host_link_GBps_per_direction");
  return bytes / (hw_.node.host_link_GBps_per_direction->value * 1e9);
}

const ResourceSharingPolicy& resource_sharing_policy(std::string_view name) {
  for (const ResourceSharingPolicy& p : kResourceSharingPolicies)
    if (p.name == name) return p;
  std::vector<std::string> names;
  for (const ResourceSharingPolicy& p : kResourceSharingPolicies) names.emplace_back(p.name);
  throw UnknownNameError("unknown resource sharing model \"" + std::string(name) + "\"" +
                         did_you_mean(name, names, "valid: " + comma_joined(names)));
}

}  // namespace moesim
