#include "reports/cost_report.hpp"

#include <cmath>
#include <sstream>

#include "models/common/units.hpp"

namespace moesim {

std::string significant(double v) {
  constexpr double kWholeFrom = 1e4, kWholeBelow = 1e15;
  if (std::fabs(v) >= kWholeFrom && std::fabs(v) < kWholeBelow) return std::to_string(std::llround(v));
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}

std::string time_text(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return significant(s * 1e6) + " us";
  if (s < 1) return significant(s * 1e3) + " ms";
  return significant(s) + " s";
}

std::string bytes_text(double b) {
  if (b >= kGiB) return significant(b / kGiB) + " GiB";
  if (b >= kMiB) return significant(b / kMiB) + " MiB";
  if (b >= kKiB) return significant(b / kKiB) + " KiB";
  return significant(b) + " B";
}

nlohmann::json kernel_json(const KernelTime& t) {
  return {{"time_us", t.time_s * 1e6},    {"flops", t.flops},
          {"hbm_bytes", t.hbm_bytes},     {"achieved_TFLOPs", t.achieved_TFLOPs},
          {"rate_TFLOPs", t.rate_TFLOPs}, {"memory_bound", t.memory_bound}};
}

std::string kernel_line(const std::string& label, const KernelTime& t) {
  std::string s = label + ": " + time_text(t.time_s);
  if (t.flops > 0) s += ", " + significant(t.achieved_TFLOPs) + " TFLOP/s achieved";
  if (t.rate_TFLOPs > 0) s += " (sustained rate " + significant(t.rate_TFLOPs) + ")";
  if (t.memory_bound) s += ", HBM-bound (" + bytes_text(t.hbm_bytes) + ")";
  return s + "\n";
}

namespace {
// " (NVLink includes 1.2 GiB PXN relay)" when the NVLink bytes include relayed rows.
std::string relay_text(double relay_bytes) {
  return relay_bytes > 0 ? " (NVLink includes " + bytes_text(relay_bytes) + " PXN relay)" : "";
}
// "; 24 network messages, per-peer latency 74.4 us" when the rank posts network sends.
std::string peers_text(int messages, double peer_latency_s) {
  if (messages == 0) return "";
  return "; " + std::to_string(messages) + " network message" + (messages > 1 ? "s" : "") + ", per-peer latency " +
         time_text(peer_latency_s);
}
}  // namespace

std::string collective_text(const CollectiveQuote& q) {
  std::ostringstream text;
  text << name_of(q.request.kind) << " of " << bytes_text(q.request.bytes) << " over " << q.request.ranks << " ranks ("
       << q.best.nodes << " NVLink domain" << (q.best.nodes > 1 ? "s" : "") << ") on " << q.profile << ", model "
       << q.model << "\n";
  for (const auto& c : q.algorithms) {
    text << (c.algorithm == q.best.algorithm ? "* " : "  ") << c.algorithm << ": time " << time_text(c.time_s)
         << " (latency " << time_text(c.latency_s) << "), algbw " << significant(c.algbw_GBps) << " GB/s, busbw "
         << significant(c.busbw_GBps) << " GB/s, per rank " << bytes_text(c.nvlink_bytes_per_rank) << " NVLink + "
         << bytes_text(c.nic_bytes_per_rank) << " NIC" << relay_text(c.nvlink_relay_bytes_per_rank)
         << peers_text(c.network_messages, c.peer_latency_s) << "\n";
  }
  if (q.request.ranks == 1) text << "  group of one: nothing to communicate, time 0\n";
  return text.str();
}

std::string ep_transfer_text(const EpTransferQuote& q) {
  std::ostringstream text;
  const EpTransferRequest& r = q.request;
  text << "EP dispatch or combine of " << bytes_text(r.bytes) << " of routed rows (top-" << significant(r.top_k)
       << " of " << significant(r.experts) << " experts) over " << r.ranks << " ranks on " << q.profile << ", PXN "
       << (r.pxn == PxnChoice::profile ? "as in the profile" : name_of(r.pxn)) << "\n";
  for (const auto& row : q.rows) {
    text << "  " << row.transport << ": ";
    if (!row.unavailable.empty()) {
      text << row.unavailable << "\n";
      continue;
    }
    const EpTransferCost& c = row.cost;
    text << "time " << time_text(c.time_s) << " (latency " << time_text(c.latency_s)
         << peers_text(c.network_messages, c.peer_latency_s) << "), per rank " << bytes_text(c.nvlink_bytes)
         << " NVLink + " << bytes_text(c.nic_bytes) << " NIC" << relay_text(c.nvlink_relay_bytes) << ", " << c.ctas
         << " SMs"
         << (row.fuses_permutation ? ", no permutation kernels" : ", permute + unpermute kernels in the layer") << "\n";
  }
  return text.str();
}

nlohmann::json ep_transfer_json(const EpTransferQuote& q) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : q.rows) {
    nlohmann::json j = {{"transport", row.transport}};
    if (!row.unavailable.empty()) {
      j["unavailable"] = row.unavailable;
    } else {
      const EpTransferCost& c = row.cost;
      j.update({{"time_us", c.time_s * 1e6},
                {"nvlink_bytes_per_rank", c.nvlink_bytes},
                {"nic_bytes_per_rank", c.nic_bytes},
                {"nvlink_relay_bytes_per_rank", c.nvlink_relay_bytes},
                {"latency_us", c.latency_s * 1e6},
                {"per_peer_latency_us", c.peer_latency_s * 1e6},
                {"network_messages", c.network_messages},
                {"sms", c.ctas},
                {"fuses_permutation", row.fuses_permutation}});
    }
    rows.push_back(j);
  }
  const EpTransferRequest& r = q.request;
  return {{"profile", q.profile},
          {"request",
           {{"bytes", r.bytes},
            {"ranks", r.ranks},
            {"ranks_per_node", r.ranks_per_node},
            {"top_k", r.top_k},
            {"experts", r.experts},
            {"pxn", name_of(r.pxn)}}},
          {"transports", rows}};
}

nlohmann::json collective_json(const CollectiveQuote& q) {
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& c : q.algorithms) {
    alternatives.push_back({{"algorithm", c.algorithm}, {"time_us", c.time_s * 1e6}, {"busbw_GBps", c.busbw_GBps}});
  }
  const CollectiveRequest& r = q.request;
  const CollectiveCost& b = q.best;
  return {{"profile", q.profile},
          {"model", q.model},
          {"request",
           {{"kind", name_of(r.kind)},
            {"bytes", r.bytes},
            {"ranks", r.ranks},
            {"ranks_per_node", r.ranks_per_node},
            {"algorithm", r.algorithm},
            {"pxn", name_of(r.pxn)}}},
          {"result",
           {{"algorithm", b.algorithm},
            {"time_us", b.time_s * 1e6},
            {"latency_us", b.latency_s * 1e6},
            {"algbw_GBps", b.algbw_GBps},
            {"busbw_GBps", b.busbw_GBps},
            {"nodes", b.nodes},
            {"ranks_per_node", b.ranks_per_node},
            {"nvlink_bytes_per_rank", b.nvlink_bytes_per_rank},
            {"nic_bytes_per_rank", b.nic_bytes_per_rank},
            {"nvlink_relay_bytes_per_rank", b.nvlink_relay_bytes_per_rank},
            {"per_peer_latency_us", b.peer_latency_s * 1e6},
            {"network_messages", b.network_messages}}},
          {"algorithms", alternatives}};
}

std::string model_listing(const std::vector<ModelFamily>& families) {
  std::ostringstream os;
  for (const auto& f : families) {
    os << f.kind << " (" << f.choose_with << ")\n";
    for (const auto& e : f.entries) os << "  " << e.name << "  " << e.description << "\n";
  }
  return os.str();
}

nlohmann::json model_listing_json(const std::vector<ModelFamily>& families) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : families) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : f.entries) entries.push_back({{"name", e.name}, {"description", e.description}});
    out.push_back({{"kind", f.kind}, {"chosen_with", f.choose_with}, {"models", entries}});
  }
  return out;
}

}  // namespace moesim
