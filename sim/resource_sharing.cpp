#include "sim/resource_sharing.hpp"

#include <algorithm>
#include <vector>

#include "models/common/units.hpp"
#include "models/costs/profile_cost_book.hpp"

namespace moesim {

Demand ResourceSharing::demand_of(const Task& t) const {
  Demand d;
  d.kind = t.kind;
  d.link = t.link_bytes[static_cast<std::size_t>(LinkClass::nic)] > 0 ? LinkClass::nic : LinkClass::nvlink;
  d.sm_ctas = t.sm_ctas;
  d.also_nvlink = d.link == LinkClass::nic && t.nvlink_relay_bytes > 0;
  return d;
}

double ResourceSharing::link_share(const RunningMix& mix, const Demand& demand) {
  const auto on = [&mix](LinkClass l) {
    return inverse(std::max<std::uint32_t>(mix.transfers[static_cast<std::size_t>(l)], 1));
  };
  const double share = on(demand.link);
  return demand.also_nvlink ? std::min(share, on(LinkClass::nvlink)) : share;
}

namespace {

// Transfers on one link class share its bandwidth equally; kernels share the SMs equally and all
// of them slow down by the interference fraction while any communication kernel runs on the GPU
// (report Table 9: grouped GEMM 23-27% slower beside dispatch/combine kernels).
class FairShare final : public ResourceSharing {
 public:
  explicit FairShare(double compute_slowdown_with_comm) : slowdown_(compute_slowdown_with_comm) {}

  double rate(const RunningMix& mix, const Demand& demand) const override {
    if (demand.kind == TaskKind::host || demand.kind == TaskKind::copy) return 1.0;
    if (is_communication(demand.kind)) return link_share(mix, demand);
    bool communication_here = false;
    for (const std::uint32_t n : mix.transfers) communication_here = communication_here || n > 0;
    const std::uint32_t kernels = mix.compute_kernels + mix.memory_kernels;
    return inverse(std::max<std::uint32_t>(kernels, 1)) / (communication_here ? 1.0 + slowdown_ : 1.0);
  }

 private:
  double slowdown_;
};

class FairShareModel final : public ResourceSharingModel {
 public:
  FairShareModel()
      : ResourceSharingModel(resource_sharing_policy("fair_share").name,
                             resource_sharing_policy("fair_share").description) {}
  std::unique_ptr<ResourceSharing> make(const HardwareProfile& hw) const override {
    return fair_share(hw.interference.compute_slowdown_with_comm.value);
  }
};

// What a GPU running kernels and NCCL communication at once shares (NVIDIA/nccl issues 689, 1428,
// 1431, 1433; the report's Table 9):
// - SMs: each NCCL channel is a CTA that holds a whole SM, so compute kernels run on the SMs the
//   running collectives leave, shared equally among them;
// - HBM: every byte a collective sends costs HBM traffic (read to send, write on receipt, and for
//   reductions the local input read too: profile interference.hbm_bytes_per_sent_byte_*), so
//   memory-bound kernels and communication share the copy bandwidth in proportion to their
//   demands when together they ask for more than it;
// - links: transfers on one link share it equally (a PXN all-to-all holds NVLink and its NIC);
// - a collective beside a compute kernel runs slower (interference.comm_slowdown_with_compute):
//   its CTAs wait for the SMs a full-grid GEMM holds (issue 1431) and compete for L2 and HBM.
// A task runs at the tightest of the rates that apply to it.
class SmHbmShare final : public ResourceSharing {
 public:
  explicit SmHbmShare(const HardwareProfile& hw)
      : sms_(hw.gpu.sm_count.value),
        hbm_Bps_(hw.compute.hbm_sustained_GBps.value * kGB),
        comm_beside_compute_(1.0 / (1.0 + hw.interference.comm_slowdown_with_compute.value)),
        gather_traffic_(hw.interference.hbm_bytes_per_sent_byte_gather.value),
        reduce_traffic_(hw.interference.hbm_bytes_per_sent_byte_reduce.value) {
    // A compute kernel's rate for each count of NCCL CTAs up to the whole GPU and of kernels up to
    // kTabulatedKernels: the same two divisions rate() makes, once per simulation.
    ctas_rows_ = static_cast<std::uint32_t>(std::max(0.0, sms_)) + 1;
    compute_rates_.resize(static_cast<std::size_t>(ctas_rows_) * kTabulatedKernels);
    for (std::uint32_t ctas = 0; ctas < ctas_rows_; ++ctas) {
      for (std::uint32_t k = 1; k <= kTabulatedKernels; ++k)
        compute_rates_[static_cast<std::size_t>(ctas) * kTabulatedKernels + k - 1] = compute_rate(ctas, k);
    }
  }

  Demand demand_of(const Task& t) const override {
    Demand d = ResourceSharing::demand_of(t);
    if (!is_communication(t.kind) || t.work_s <= 0) return d;
    const bool reduces = t.coll == CollectiveKind::all_reduce || t.coll == CollectiveKind::reduce_scatter;
    const double sent = t.link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] +
                        t.link_bytes[static_cast<std::size_t>(LinkClass::nic)];
    d.hbm_Bps = static_cast<std::uint64_t>(sent * (reduces ? reduce_traffic_ : gather_traffic_) / t.work_s);
    return d;
  }

  // Each kind's branch works out only what applies to it: the engine asks for a rate every time a
  // task's running mix changes.
  double rate(const RunningMix& mix, const Demand& demand) const override {
    if (demand.kind == TaskKind::host || demand.kind == TaskKind::copy) return 1.0;
    const std::uint32_t kernels = std::max<std::uint32_t>(mix.compute_kernels + mix.memory_kernels, 1);
    if (demand.kind == TaskKind::compute) {
      if (kernels <= kTabulatedKernels && mix.comm_ctas < ctas_rows_)
        return compute_rates_[static_cast<std::size_t>(mix.comm_ctas) * kTabulatedKernels + kernels - 1];
      return compute_rate(mix.comm_ctas, kernels);
    }
    // Each memory kernel asks for the whole copy rate; together with the communication's traffic
    // the demand beyond it is shared in proportion.
    const double hbm_demand =
        static_cast<double>(mix.memory_kernels) * hbm_Bps_ + static_cast<double>(mix.comm_hbm_Bps);
    const double hbm_share = hbm_demand > hbm_Bps_ ? hbm_Bps_ / hbm_demand : 1.0;
    if (demand.kind == TaskKind::memory) return std::min(inverse(kernels), hbm_share);
    const double link = link_share(mix, demand);
    const double beside = mix.compute_kernels > 0 ? comm_beside_compute_ : 1.0;
    return std::min({link, beside, hbm_share});
  }

 private:
  static constexpr std::uint32_t kTabulatedKernels = 8;

  // SMs left to kernels: NCCL CTAs never share an SM with a kernel (issue 689); one SM at least.
  // Shared equally among the running kernels.
  double compute_rate(std::uint32_t ctas, std::uint32_t kernels) const {
    const double free_sms = std::max(1.0, sms_ - static_cast<double>(ctas)) / sms_;
    return free_sms / static_cast<double>(kernels);
  }

  double sms_;
  double hbm_Bps_;
  double comm_beside_compute_;
  double gather_traffic_;
  double reduce_traffic_;
  std::uint32_t ctas_rows_ = 0;
  std::vector<double> compute_rates_;  // [CTAs * kTabulatedKernels + kernels - 1]
};

class SmHbmShareModel final : public ResourceSharingModel {
 public:
  SmHbmShareModel()
      : ResourceSharingModel(resource_sharing_policy("sm_hbm_share").name,
                             resource_sharing_policy("sm_hbm_share").description) {}
  std::unique_ptr<ResourceSharing> make(const HardwareProfile& hw) const override {
    return std::make_unique<SmHbmShare>(hw);
  }
};

}  // namespace

std::unique_ptr<ResourceSharing> fair_share(double compute_slowdown_with_comm) {
  return std::make_unique<FairShare>(compute_slowdown_with_comm);
}

const Registry<ResourceSharingModel>& resource_sharing_models() {
  static const auto registry =
      make_registry<ResourceSharingModel, FairShareModel, SmHbmShareModel>("resource sharing model");
  return registry;
}

}  // namespace moesim
