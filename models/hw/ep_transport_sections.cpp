// Reading a hardware profile's interconnect.ep_transports section: the numbers of each EP
// transport beyond NCCL's all-to-all (models/costs/ep_transports.hpp prices them).
#include "models/hw/profile_sections.hpp"

namespace moesim::profile_detail {

EpTransportSpecs parse_ep_transports(const JsonReader& ep) {
  EpTransportSpecs s;
  const Range efficiency{0.0, 1.0, true};
  if (const auto sm = ep.optional_object("symmetric_memory")) {
    s.symmetric_memory = SymmetricMemoryTransportSpec{
        quantity(*sm, "time_over_nccl_all_to_all", Range::between(0.1, 10.0)), quantity(*sm, "ctas", kCtas)};
    sm->finish();
  }
  if (const auto d = ep.optional_object("deepep")) {
    s.deepep =
        DeepEpTransportSpec{quantity(*d, "base_latency_us", plausible::kLatencyUs), quantity(*d, "ctas", kCtas),
                            quantity(*d, "nvlink_efficiency", efficiency), quantity(*d, "rdma_efficiency", efficiency)};
    d->finish();
  }
  if (const auto h = ep.optional_object("hybridep")) {
    const auto by_sms = [&](std::string_view key, std::string_view y, Range range) {
      return table(*h, key, "sms", y, range);
    };
    HybridEpTransportSpec spec{quantity(*h, "base_latency_us", plausible::kLatencyUs),
                               by_sms("dispatch_GBps_by_sms", "GBps", Range::between(1.0, 10000.0)),
                               by_sms("combine_GBps_by_sms", "GBps", Range::between(1.0, 10000.0)), std::nullopt,
                               std::nullopt};
    if (h->has("rdma_dispatch_efficiency_by_sms") || h->has("rdma_combine_efficiency_by_sms")) {
      spec.rdma_dispatch_efficiency_by_sms = by_sms("rdma_dispatch_efficiency_by_sms", "fraction", efficiency);
      spec.rdma_combine_efficiency_by_sms = by_sms("rdma_combine_efficiency_by_sms", "fraction", efficiency);
    }
    s.hybridep = std::move(spec);
    h->finish();
  }
  ep.finish();
  return s;
}

}  // namespace moesim::profile_detail
