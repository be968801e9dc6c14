// The multi-node fabric (collective_algorithms.cpp all_to_all across nodes, hardware_profiles/
// README.md "Scale-out fabric"): a rail-optimized fabric with NCCL's PXN relay against the rank's
// own rail through the spine, byte counts worked out by hand; the per-peer latency against the
// table it was fitted to; the NVLink-only EP8 point it must leave alone; and the profile keys it
// needs, refused by path when missing.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/common/json_reader.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
json b300_doc() { return read_json_file(test::source_path("hardware_profiles/b300-hgx.json")); }
HardwareProfile parse(const json& doc) { return parse_hardware_profile(JsonReader(doc, "profile.json", "")); }

constexpr double kBytes = 512.0 * 1024 * 1024;  // one rank's routed rows, every top-k copy
constexpr const char* kEp8 = "scenarios/fig8/moe-ddp-ep8.json";

CollectiveCost all_to_all(const HardwareProfile& hw, int ranks, PxnChoice pxn) {
  CollectiveRequest r;
  r.kind = CollectiveKind::all_to_all;
  r.bytes = kBytes;
  r.ranks = ranks;
  r.pxn = pxn;
  return collective_models().get("nccl").cost(hw, r);
}

// What one rank of an all-to-all over m nodes of 8 GPUs sends, counted peer by peer: S/n to each
// of the 7 NVLink peers; of the 8(m-1) remote peers, m-1 on its own rail and 7(m-1) on other
// rails. With PXN each cross-rail row first crosses NVLink to the local GPU on the destination's
// rail, and this rank, as that GPU for the 7 others, forwards theirs over its own rail.
struct HandCount {
  double nvlink = 0, relay = 0, nic = 0;
  int messages = 0;
};
HandCount by_hand(int m, bool pxn) {
  const int n = 8 * m;
  const double chunk = kBytes / n;
  HandCount h;
  const int nvlink_peers = 7, same_rail = m - 1, cross_rail = 7 * (m - 1);
  h.nic = chunk * (same_rail + cross_rail);
  if (pxn) {
    h.relay = chunk * cross_rail;                    // the other 7 GPUs' rows for the remote GPUs on this rail
    h.nvlink = chunk * (nvlink_peers + cross_rail);  // own rows to local peers + own cross-rail rows to their relays
    h.messages = m - 1;                              // one aggregated message per remote node
  } else {
    h.nvlink = chunk * nvlink_peers;
    h.messages = same_rail + cross_rail;  // one per remote peer
  }
  return h;
}
}  // namespace

TEST_CASE("All-to-all bytes with and without PXN match a peer-by-peer count (EP16 on 2 nodes, EP32 on 4)", "[unit]") {
  const HardwareProfile hw = parse(b300_doc());
  for (const int m : {2, 4}) {
    for (const bool pxn : {true, false}) {
      SECTION("EP" + std::to_string(8 * m) + " over " + std::to_string(m) + " nodes, PXN " + (pxn ? "on" : "off")) {
        const HandCount h = by_hand(m, pxn);
        const CollectiveCost c = all_to_all(hw, 8 * m, pxn ? PxnChoice::on : PxnChoice::off);
        CHECK(c.algorithm == "p2p");
        CHECK(c.nodes == m);
        CHECK(c.nvlink_bytes_per_rank == Approx(h.nvlink));
        CHECK(c.nvlink_relay_bytes_per_rank == Approx(h.relay));
        CHECK(c.nic_bytes_per_rank == Approx(h.nic));
        CHECK(c.network_messages == h.messages);
      }
    }
  }
  SECTION("the closed forms: PXN NVLink S(r-1)/r, rail S(n-r)/n either way") {
    const CollectiveCost on = all_to_all(hw, 32, PxnChoice::on), off = all_to_all(hw, 32, PxnChoice::off);
    CHECK(on.nvlink_bytes_per_rank == Approx(kBytes * 7 / 8));
    CHECK(off.nvlink_bytes_per_rank == Approx(kBytes * 7 / 32));
    CHECK(on.nic_bytes_per_rank == Approx(kBytes * 24 / 32));
    CHECK(off.nic_bytes_per_rank == Approx(on.nic_bytes_per_rank));
  }
}

TEST_CASE("PXN trades a spine hop and per-peer messages for one NVLink hop", "[unit]") {
  const HardwareProfile hw = parse(b300_doc());
  const auto& net = hw.interconnect.inter_node;
  const double base = hw.interconnect.intra_node.p2p.base_latency_us.value,
               nvl = hw.interconnect.intra_node.hop_latency_us.value;
  const double peer = net.per_peer_latency_us.value, spine = net.spine_hop_latency_us.value,
               hop = net.hop_latency_us.value;
  SECTION("EP16 over 2 nodes") {
    CHECK(all_to_all(hw, 16, PxnChoice::on).latency_s * 1e6 == Approx(base + nvl + hop + 1 * peer));
    CHECK(all_to_all(hw, 16, PxnChoice::off).latency_s * 1e6 == Approx(base + hop + spine + 8 * peer));
  }
  SECTION("EP32 over 4 nodes") {
    CHECK(all_to_all(hw, 32, PxnChoice::on).latency_s * 1e6 == Approx(base + nvl + hop + 3 * peer));
    CHECK(all_to_all(hw, 32, PxnChoice::off).latency_s * 1e6 == Approx(base + hop + spine + 24 * peer));
  }
  SECTION("the profile's choice is NCCL's default: PXN on") {
    CHECK(net.pxn.value);
    CHECK(net.fabric.value == ScaleOutTopology::rail_optimized);
    CHECK(all_to_all(hw, 32, PxnChoice::profile).nvlink_relay_bytes_per_rank ==
          all_to_all(hw, 32, PxnChoice::on).nvlink_relay_bytes_per_rank);
  }
  SECTION("a fat tree has no rail to relay to: every cross-node row may cross the spine") {
    json doc = b300_doc();
    doc["interconnect"]["inter_node"]["fabric"]["value"] = "fat_tree";
    const HardwareProfile fat = parse(doc);
    const CollectiveCost c = all_to_all(fat, 16, PxnChoice::on);
    CHECK(c.nvlink_relay_bytes_per_rank == 0);
    CHECK(c.latency_s * 1e6 == Approx(base + hop + spine + 8 * peer));
  }
  SECTION("one GPU per node: every remote peer is on the rank's rail, nothing to relay, no spine") {
    CollectiveRequest r;
    r.kind = CollectiveKind::all_to_all;
    r.bytes = kBytes;
    r.ranks = 4;
    r.ranks_per_node = 1;
    const CollectiveCost c = collective_models().get("nccl").cost(hw, r);
    CHECK(c.nvlink_bytes_per_rank == 0);
    CHECK(c.latency_s * 1e6 == Approx(base + hop + 3 * peer));
  }
}

TEST_CASE("The per-peer latency is the slope of the DeepEP low-latency table it was fitted to", "[validation]") {
  // deepseek-ai/DeepEP README, low-latency kernels (pure RDMA, the same bytes per rank at every EP
  // size): dispatch 77 / 118 / 155 us at EP 8 / 16 / 32. Least-squares slope over n - 1 peers.
  const std::vector<std::pair<double, double>> table = {{8, 77}, {16, 118}, {32, 155}};
  double mx = 0, my = 0;
  for (const auto& [n, t] : table) mx += (n - 1) / 3, my += t / 3;
  double sxy = 0, sxx = 0;
  for (const auto& [n, t] : table) sxy += (n - 1 - mx) * (t - my), sxx += (n - 1 - mx) * (n - 1 - mx);
  const double slope_us = sxy / sxx;
  for (const char* file : {"b300-hgx", "b200-hgx", "h100-hgx", "h200-hgx", "gb200-nvl72", "gb300-nvl72",
                           "a100-sxm-80gb", "a100-sxm-40gb"}) {
    const HardwareProfile hw =
        parse(read_json_file(test::source_path("hardware_profiles/" + std::string(file) + ".json")));
    CHECK(hw.interconnect.inter_node.per_peer_latency_us.value == Approx(slope_us).margin(0.05));
  }
  SECTION("without PXN a small all-to-all's fixed cost grows by that slope per remote peer, as the table's does") {
    const HardwareProfile hw = parse(b300_doc());
    const double ep16 = all_to_all(hw, 16, PxnChoice::off).latency_s,
                 ep32 = all_to_all(hw, 32, PxnChoice::off).latency_s;
    const double ep64 = all_to_all(hw, 64, PxnChoice::off).latency_s;
    CHECK((ep32 - ep16) * 1e6 == Approx(16 * slope_us).epsilon(0.05));  // 8 -> 24 remote peers
    CHECK((ep64 - ep32) * 1e6 == Approx(32 * slope_us).epsilon(0.05));  // 24 -> 56
    // The table's own growth from EP8 to EP32 (24 more peers): 78 us.
    CHECK(24 * hw.interconnect.inter_node.per_peer_latency_us.value == Approx(155 - 77).epsilon(0.1));
  }
  SECTION("with PXN it grows per remote node; DeepEP posts one message per remote node too") {
    const HardwareProfile hw = parse(b300_doc());
    const double peer = hw.interconnect.inter_node.per_peer_latency_us.value * 1e-6;
    CHECK(all_to_all(hw, 32, PxnChoice::on).peer_latency_s == Approx(3 * peer));
    EpTransferRequest r;
    r.bytes = kBytes;
    r.ranks = 32;
    r.top_k = 4;
    r.experts = 64;
    const EpTransferCost deepep = ep_transport_model(EpTransport::deepep).cost(hw, collective_models().get("nccl"), r);
    CHECK(deepep.network_messages == 3);
    CHECK(deepep.peer_latency_s == Approx(3 * peer));
  }
}

TEST_CASE("NVLink-only EP8: the fabric terms leave the Figure 8 step as it was", "[golden]") {
  // The step before the fabric terms existed is the same scenario with them zeroed (no per-peer
  // latency, no spine hop, no relay): inside one node none of them applies.
  const std::vector<std::string> legacy = {"hardware.interconnect.inter_node.per_peer_latency_us.value=0",
                                           "hardware.interconnect.inter_node.spine_hop_latency_us.value=0",
                                           "hardware.interconnect.inter_node.pxn.value=false"};
  for (const char* transport : {"symmetric_memory", "nccl_all_to_all", "deepep"}) {
    SECTION(transport) {
      std::vector<std::string> set = {std::string("plan.expert_parallel.transport=") + transport};
      const StepResult now = simulate(load_scenario(test::source_path(kEp8), set)).result;
      set.insert(set.end(), legacy.begin(), legacy.end());
      const StepResult before = simulate(load_scenario(test::source_path(kEp8), set)).result;
      CHECK(std::abs(now.step_time_s / before.step_time_s - 1) < 0.01);
      CHECK(now.step_time_s == before.step_time_s);  // in fact unchanged: nothing leaves the node
      const auto a2a = static_cast<std::size_t>(CollectiveKind::all_to_all);
      CHECK(now.nvlink_relay_bytes_per_rank[a2a] == 0);
    }
  }
  SECTION("the shipped scenario's step: 9633.9 ms, as before this change") {
    CHECK(simulate(load_scenario(test::source_path(kEp8), {})).result.step_time_s == Approx(9.6339).epsilon(1e-4));
  }
}

TEST_CASE("EP32 over 4 nodes: the replay's ledger carries the relay, and PXN off costs time", "[unit]") {
  const std::vector<std::string> ep32 = {"plan.nodes=4", "plan.expert_parallel.degree=32",
                                         "plan.expert_parallel.transport=nccl_all_to_all",
                                         "architecture.moe.num_experts=64"};
  auto with = [&ep32](const std::string& pxn) {
    std::vector<std::string> set = ep32;
    set.push_back("plan.expert_parallel.pxn=" + pxn);
    return simulate(load_scenario(test::source_path(kEp8), set)).result;
  };
  const StepResult on = with("true"), off = with("false");
  const StepResult by_profile = simulate(load_scenario(test::source_path(kEp8), ep32)).result;
  const auto a2a = static_cast<std::size_t>(CollectiveKind::all_to_all);
  const auto nvlink = static_cast<std::size_t>(LinkClass::nvlink), nic = static_cast<std::size_t>(LinkClass::nic);
  CHECK(by_profile.step_time_s == on.step_time_s);
  CHECK(off.nvlink_relay_bytes_per_rank[a2a] == 0);
  // Per rank and step: the relay is 21/32 of the all-to-all buffer, the own NVLink rows 7/32.
  CHECK(on.nvlink_relay_bytes_per_rank[a2a] == Approx(off.bytes_per_rank[a2a][nvlink] * 3));
  CHECK(on.bytes_per_rank[a2a][nvlink] == Approx(off.bytes_per_rank[a2a][nvlink] * 4));
  CHECK(on.bytes_per_rank[a2a][nic] == Approx(off.bytes_per_rank[a2a][nic]));
  CHECK(off.step_time_s > on.step_time_s);
}

TEST_CASE("A profile without a fabric key is refused by its JSON path", "[unit]") {
  for (const char* key : {"fabric", "spine_hop_latency_us", "per_peer_latency_us", "pxn"}) {
    SECTION(key) {
      json doc = b300_doc();
      doc["interconnect"]["inter_node"].erase(key);
      try {
        parse(doc);
        FAIL("a profile without interconnect.inter_node." << key << " was accepted");
      } catch (const InputError& e) {
        CHECK(e.file() == "profile.json");
        CHECK(e.path() == std::string("interconnect.inter_node.") + key);
        CHECK_THAT(e.message(), Catch::Contains("required field is missing"));
      }
    }
  }
  SECTION("an unknown fabric names the allowed ones") {
    json doc = b300_doc();
    doc["interconnect"]["inter_node"]["fabric"]["value"] = "dragonfly";
    CHECK_THROWS_WITH(parse(doc), Catch::Contains("interconnect.inter_node.fabric.value") &&
                                      Catch::Contains("rail_optimized") && Catch::Contains("fat_tree"));
  }
  SECTION("PXN is a true/false setting with its provenance") {
    json doc = b300_doc();
    doc["interconnect"]["inter_node"]["pxn"]["source"] = "";
    CHECK_THROWS_WITH(parse(doc), Catch::Contains("interconnect.inter_node.pxn.source"));
  }
}

TEST_CASE("moesim cost ep shows the PXN relay bytes and the per-peer latency term", "[unit]") {
  test::TempDir dir;
  const std::string args = "cost ep --profile " + test::source_path("hardware_profiles/b300-hgx.json") +
                           " --bytes 512MiB --ranks 32 --top-k 4 --experts 64 --json ";
  const auto nccl_row = [&dir](const std::string& file) {
    const auto j = nlohmann::json::parse(test::slurp(dir.path(file)));
    for (const auto& row : j["transports"]) {
      if (row["transport"] == "nccl_all_to_all") return row;
    }
    return nlohmann::json();
  };
  REQUIRE(test::run_cli(args + dir.path("on.json")) == 0);
  REQUIRE(test::run_cli(args + dir.path("off.json") + " --pxn off") == 0);
  const auto on = nccl_row("on.json"), off = nccl_row("off.json");
  CHECK(on["nvlink_relay_bytes_per_rank"].get<double>() == Approx(kBytes * 21 / 32));
  CHECK(off["nvlink_relay_bytes_per_rank"].get<double>() == 0);
  CHECK(on["network_messages"] == 3);
  CHECK(off["network_messages"] == 24);
  CHECK(off["per_peer_latency_us"].get<double>() == Approx(24 * 3.1));
  CHECK(off["latency_us"].get<double>() > off["per_peer_latency_us"].get<double>());
  CHECK(test::run_cli(args + dir.path("bad.json") + " --pxn maybe") == 2);
}
