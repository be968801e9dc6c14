#include "models/hw/hardware_profile.hpp"

#include <cmath>
#include <stdexcept>

#include "models/hw/power_limit.hpp"
#include "models/hw/profile_sections.hpp"

namespace moesim {

std::int64_t hosts_per_domain(const HardwareProfile& hw) {
  return static_cast<std::int64_t>(hw.interconnect.intra_node.domain_gpus.value / hw.node.gpus_per_node.value);
}

std::string_view name_of(SourceKind k) {
  switch (k) {
    case SourceKind::datasheet: return "datasheet";
    case SourceKind::published: return "published";
    case SourceKind::fitted: return "fitted";
    case SourceKind::assumption: return "assumption";
  }
  return "?";
}

std::string_view name_of(ScaleOutTopology t) {
  return t == ScaleOutTopology::rail_optimized ? "rail_optimized" : "fat_tree";
}

void ProfileTable::add(TablePoint p) {
  if (!(p.x > 0) || (!points_.empty() && !(p.x > points_.back().x)))
    throw std::logic_error("ProfileTable::add: x must be positive and increasing (the parser checks it)");
  points_.push_back(p);
  log_x_.push_back(std::log(p.x));
}

double ProfileTable::linear_at(double x) const {
  const auto& p = points_;
  if (p.size() == 1 || x <= p.front().x) return p.front().y;
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (x <= p[i].x) return p[i - 1].y + (x - p[i - 1].x) / (p[i].x - p[i - 1].x) * (p[i].y - p[i - 1].y);
  }
  return p.back().y;
}

HardwareProfile parse_hardware_profile(const JsonReader& in) {
  using namespace profile_detail;
  HardwareProfile h;
  in.string_or("schema", "");
  h.name = in.string("name");
  h.description = in.string_or("description", "");
  {
    const auto g = in.object("gpu");
    h.gpu.model = g.string("model");
    h.gpu.peak_bf16_TFLOPs = quantity(g, "peak_bf16_dense_TFLOPs", plausible::kPeakTFLOPs);
    h.gpu.hbm_bw_GBps = quantity(g, "hbm_bw_GBps", plausible::kHbmGBps);
    h.gpu.sm_count = quantity(g, "sm_count", Range::between(1, 1024));
    h.gpu.peak_fp8_dense_TFLOPs = optional_quantity(g, "peak_fp8_dense_TFLOPs", plausible::kFp8PeakTFLOPs);
    h.gpu.board_power_W = optional_quantity(g, "board_power_W", plausible::kBoardPowerW);
    h.gpu.power_limit_W = read_power_limit_W(g);
    g.finish();
  }
  {
    const auto m = in.object("memory");
    h.memory.usable_capacity_GiB = quantity(m, "usable_capacity_GiB", plausible::kCapacityGiB);
    h.memory.cuda_context_GiB = quantity(m, "cuda_context_GiB", plausible::kReserveGiB);
    h.memory.nccl_buffers_GiB = quantity(m, "nccl_buffers_GiB", plausible::kReserveGiB);
    h.memory.library_workspace_GiB = quantity(m, "library_workspace_GiB", plausible::kReserveGiB);
    h.memory.fragmentation_fraction = quantity(m, "fragmentation_fraction", Range::between(0.0, 0.9));
    m.finish();
  }
  {
    const auto n = in.object("node");
    h.node.gpus_per_node = quantity(n, "gpus_per_node", plausible::kHostGpus);
    h.node.nvlink_bw_GBps_per_direction = quantity(n, "nvlink_bw_GBps_per_direction", plausible::kNvlinkGBps);
    h.node.nic_bw_Gbps_per_gpu = quantity(n, "nic_bw_Gbps_per_gpu", plausible::kNicGbps);
    h.node.host_link_GBps_per_direction =
        optional_quantity(n, "host_link_GBps_per_direction", plausible::kHostLinkGBps);
    n.finish();
  }
  h.compute = parse_compute(in.object("compute"));
  check_rates_under_peaks(h, in);
  apply_power_limit(h, in);
  h.interconnect = parse_interconnect(in.object("interconnect"));
  const double domain = h.interconnect.intra_node.domain_gpus.value, host = h.node.gpus_per_node.value;
  if (domain < host || std::fmod(domain, host) != 0) {
    in.object("interconnect")
        .object("intra_node")
        .object("domain_gpus")
        .fail("value", "an NVLink domain joins whole hosts: a multiple of node.gpus_per_node (" +
                           std::to_string(static_cast<int>(host)) + ")");
  }
  {
    const auto f = in.object("interference");
    // A fraction of GEMM time; B300 measures 0.23-0.27, so 0.95 only rejects nonsense.
    h.interference.compute_slowdown_with_comm = quantity(f, "compute_slowdown_with_comm", Range::between(0.0, 0.95));
    // Published: up to 2x (0.0-1.0); 4 only rejects nonsense.
    h.interference.comm_slowdown_with_compute = quantity(f, "comm_slowdown_with_compute", Range::between(0.0, 4.0));
    // NVIDIA/nccl issue 1428: at least 2x, up to 3x the link rate; 1-8 allows any NCCL protocol.
    h.interference.hbm_bytes_per_sent_byte_gather =
        quantity(f, "hbm_bytes_per_sent_byte_gather", Range::between(1.0, 8.0));
    h.interference.hbm_bytes_per_sent_byte_reduce =
        quantity(f, "hbm_bytes_per_sent_byte_reduce", Range::between(1.0, 8.0));
    f.finish();
  }
  {
    const auto host = in.object("host");
    // Seconds per step would be a unit mistake (ms or s typed as us).
    h.host.step_overhead_us = quantity(host, "step_overhead_us", Range::between(0.0, 1e6));
    host.finish();
  }
  in.finish();
  return h;
}

}  // namespace moesim
