// The kernel and collective times a schedule needs, behind one interface: the profile-backed
// book (profile_cost_book.hpp) asks the registered cost models chosen by name; tests use books
// with hand-set numbers so that golden timelines can be worked out by hand.
#pragma once

#include "models/costs/collective_model.hpp"
#include "models/costs/compute_costs.hpp"

namespace moesim {

struct CommCost {
  double time_s = 0;
  double nvlink_bytes = 0;        // sent by one rank over NVLink
  double nic_bytes = 0;           // sent by one rank over its NIC
  int ctas = 0;                   // NCCL CTAs the collective holds on each rank (one SM each)
  double nvlink_relay_bytes = 0;  // of nvlink_bytes: PXN relay of other ranks' cross-rail rows
};

class CostBook {
 public:
  virtual ~CostBook() = default;
  virtual double gemm(const GemmShape& shape) const = 0;  // BF16
  virtual double grouped_gemm(const GroupedGemmShape& shape) const = 0;
  virtual double attention(const AttentionShape& shape, bool backward) const = 0;
  virtual double scan(const ScanShape& shape, bool backward) const = 0;  // a Mamba-2 SSD scan
  virtual double memory(double bytes, MemoryKernel kind) const = 0;      // bytes read + written
  // `request.bytes` in the nccl-tests convention (collective_model.hpp).
  virtual CommCost collective(const CollectiveRequest& request) const = 0;
  // One EP dispatch or combine over `transport` (ep_transports.hpp). This default prices every
  // transport as the NCCL collective it runs or is measured against (NCCL's all-to-all, or the
  // all-gather dispatcher's all-gather and reduce-scatter), for books with hand-set numbers.
  virtual CommCost ep_transfer(EpTransport transport, const EpTransferRequest& request) const {
    return collective(ep_collective_request(transport, request));
  }
  // Host work the GPU waits for once per step (optimizer launch, host syncs), in seconds.
  virtual double step_host_s() const = 0;
  // One copy of `bytes` between the GPU and pinned host memory, one way (activation offload).
  virtual double host_copy_s(double bytes) const = 0;
};

}  // namespace moesim
