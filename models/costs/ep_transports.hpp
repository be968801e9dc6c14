// How an MoE layer's routed rows travel over the EP-MP group (cost_types.hpp EpTransport): one
// registered implementation per transport, each with its time, the bytes it puts on NVLink and
// on the NIC rail, the SMs its kernels hold (for the resource-sharing policy) and whether it
// writes rows straight into their experts' slots (then the layer runs no permutation kernels).
// Every number comes from the profile's interconnect.ep_transports section (hardware_profiles/
// README.md); a profile without a transport's numbers refuses plans that ask for it.
#pragma once

#include "models/common/registry.hpp"
#include "models/costs/collective_model.hpp"

namespace moesim {

class EpTransportModel : public Registered {
 public:
  using Registered::Registered;
  // `collectives`: the scenario's collective model (the NCCL transport is one of its calls).
  virtual EpTransferCost cost(const HardwareProfile& hw, const CollectiveModel& collectives,
                              const EpTransferRequest& request) const = 0;
  // True when dispatch writes each routed row into its expert's slot on the destination and
  // combine reads it from there: no permutation before dispatch or after combine.
  virtual bool fuses_permutation() const = 0;
  // True when every rank receives every token of the group and picks out its own experts' rows
  // (the all-gather dispatcher): the transfer moves the rank's tokens once, whatever the routing,
  // and the request's bytes are those tokens (EpTransferRequest::bytes).
  virtual bool gathers_tokens() const { return false; }
};

// Registered under name_of(EpTransport): "nccl_all_to_all", "symmetric_memory", "deepep",
// "nccl_all_gather".
const Registry<EpTransportModel>& ep_transport_models();
const EpTransportModel& ep_transport_model(EpTransport transport);

// Probability that a token's top-K experts (distinct, drawn uniformly from `experts`) include at
// least one of the `held` experts of one rank or node: DeepEP sends the token there once.
double hit_probability(double experts, double held, double top_k);

}  // namespace moesim
