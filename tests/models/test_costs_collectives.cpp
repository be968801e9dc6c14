// The "nccl" collective model against nccl-tests conventions and published B300 figures.
#include <catch2/catch.hpp>

#include "models/common/json_reader.hpp"
#include "models/common/units.hpp"
#include "models/costs/collective_model.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/input/scenario.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
HardwareProfile load(const std::string& name) {
  const std::string path = test::source_path("hardware_profiles/" + name + ".json");
  return parse_hardware_profile(JsonReader(read_json_file(path), path, ""));
}
const HardwareProfile& b300() {
  static const HardwareProfile hw = load("b300-hgx");
  return hw;
}
const CollectiveModel& nccl() { return collective_models().get("nccl"); }

CollectiveCost run(CollectiveKind kind, double bytes, int ranks, int per_node = 0, std::string alg = "",
                   const HardwareProfile& hw = b300()) {
  CollectiveRequest r;
  r.kind = kind;
  r.bytes = bytes;
  r.ranks = ranks;
  r.ranks_per_node = per_node;
  r.algorithm = std::move(alg);
  return nccl().cost(hw, r);
}
}  // namespace

TEST_CASE("nccl-tests busbw factors", "[unit]") {
  CHECK(busbw_factor(CollectiveKind::all_reduce, 8) == Approx(14.0 / 8));
  CHECK(busbw_factor(CollectiveKind::all_gather, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(CollectiveKind::reduce_scatter, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(CollectiveKind::all_to_all, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(CollectiveKind::broadcast, 8) == 1);
  CHECK(busbw_factor(CollectiveKind::send_recv, 2) == 1);
  for (auto k : all_collective_kinds()) CHECK(parse_collective_kind(name_of(k)) == k);
  CHECK_THROWS_WITH(parse_collective_kind("allreduce"), Catch::Contains("valid: all_reduce, all_gather"));
}

TEST_CASE("busbw approaches the profile bandwidth for large messages, latency dominates small ones", "[unit]") {
  const auto& ring = b300().interconnect.intra_node.ring.busbw_efficiency;
  const double link = b300().node.nvlink_bw_GBps_per_direction.value;
  for (auto kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::reduce_scatter}) {
    const CollectiveCost big = run(kind, 256 * kGiB, 8, 0, "ring");
    const double eff = (kind == CollectiveKind::all_reduce ? ring.all_reduce : ring.all_gather)->value;
    CHECK(big.busbw_GBps == Approx(eff * link).epsilon(0.01));
    CHECK(big.busbw_GBps < eff * link);
    const CollectiveCost small = run(kind, 8, 8, 0, "ring");
    CHECK(small.latency_s / small.time_s > 0.99);
    CHECK(small.busbw_GBps < 1);
  }
  const CollectiveCost a2a = run(CollectiveKind::all_to_all, 256 * kGiB, 8);
  CHECK(a2a.algorithm == "p2p");
  CHECK(a2a.busbw_GBps ==
        Approx(b300().interconnect.intra_node.p2p.busbw_efficiency.all_to_all->value * link).epsilon(0.01));
  // algbw = bytes / time, busbw = algbw x 2(n-1)/n.
  const CollectiveCost c = run(CollectiveKind::all_reduce, kGiB, 8);
  CHECK(c.algbw_GBps == Approx(kGiB / c.time_s / 1e9));
  CHECK(c.busbw_GBps == Approx(c.algbw_GBps * 14 / 8));
}

TEST_CASE("1 GiB all_reduce over 8 B300 lands in the published 695-845 GB/s busbw range", "[unit][validation]") {
  // NVIDIA/nccl issue 2140: ~695 GB/s without NVLS, ~845 GB/s with NVLS, large messages.
  const CollectiveCost best = run(CollectiveKind::all_reduce, kGiB, 8);
  CHECK(best.algorithm == "nvls");
  CHECK(best.busbw_GBps >= 695);
  CHECK(best.busbw_GBps <= 845);
  const CollectiveCost ring = run(CollectiveKind::all_reduce, kGiB, 8, 0, "ring");
  CHECK(ring.busbw_GBps == Approx(695).epsilon(0.05));
  CHECK(ring.time_s > best.time_s);
  CHECK(ring.nic_bytes_per_rank == 0);
  CHECK(ring.nvlink_bytes_per_rank == Approx(14.0 / 8 * kGiB));
}

TEST_CASE("A 16-rank all_reduce over two nodes is slower than the 8-rank one", "[unit]") {
  const CollectiveCost one = run(CollectiveKind::all_reduce, kGiB, 8);
  const CollectiveCost two = run(CollectiveKind::all_reduce, kGiB, 16, 8);
  CHECK(two.nodes == 2);
  CHECK(two.time_s > one.time_s);
  CHECK(two.nic_bytes_per_rank > 0);
  for (const auto& alg : nccl().algorithms(b300(), {CollectiveKind::all_reduce, kGiB, 16, 8, ""})) {
    INFO(alg);
    CHECK(run(CollectiveKind::all_reduce, kGiB, 16, 8, alg).time_s > one.time_s);
  }
  // Hierarchical: intra reduce-scatter, 2-node all_reduce of 1/8 on each rail, intra all-gather.
  const CollectiveCost h = run(CollectiveKind::all_reduce, kGiB, 16, 8, "hierarchical");
  CHECK(h.nic_bytes_per_rank == Approx(kGiB / 8));
  CHECK(h.nvlink_bytes_per_rank == Approx(2 * 7.0 / 8 * kGiB));
  // Flat ring: a node's ring traffic leaves through its 8 rails, 1/8 each.
  const CollectiveCost ring = run(CollectiveKind::all_reduce, kGiB, 16, 8, "ring");
  CHECK(ring.nic_bytes_per_rank == Approx(30.0 / 16 * kGiB / 8));
  // One rank per node: everything crosses the NIC at the rail's achieved rate.
  const double rail = 800.0 / 8 * b300().interconnect.inter_node.nic_efficiency.value;
  const CollectiveCost spread = run(CollectiveKind::all_reduce, 64 * kGiB, 2, 1);
  CHECK(spread.busbw_GBps == Approx(rail).epsilon(0.01));
}

TEST_CASE("A group of one costs nothing", "[unit]") {
  for (auto kind : all_collective_kinds()) {
    const CollectiveCost c = run(kind, kGiB, 1);
    CHECK(c.time_s == 0);
    CHECK(c.algorithm == "none");
    CHECK(c.busbw_GBps == 0);
  }
}

TEST_CASE("Forced algorithms and bad groups are errors that list what is valid", "[unit]") {
  CHECK_THROWS_WITH(run(CollectiveKind::all_reduce, kGiB, 8, 0, "butterfly"),
                    Catch::Contains("valid: ring, tree, nvls, nvls_tree, hierarchical, p2p"));
  // NVLS does not run all_gather on B300's profile (nccl issue 1506), nor across nodes.
  CHECK_THROWS_WITH(run(CollectiveKind::all_gather, kGiB, 8, 0, "nvls"), Catch::Contains("available: ring"));
  CHECK_THROWS_AS(run(CollectiveKind::all_reduce, kGiB, 16, 8, "nvls"), InputError);
  CHECK_THROWS_AS(run(CollectiveKind::all_reduce, kGiB, 8, 0, "hierarchical"), InputError);
  CHECK(run(CollectiveKind::all_reduce, kGiB, 16, 8, "nvls_tree").algorithm == "nvls_tree");
  // 12 ranks do not fill 8-GPU domains; more ranks per node than the domain; not dividing.
  CHECK_THROWS_WITH(run(CollectiveKind::all_reduce, kGiB, 12), Catch::Contains("give ranks_per_node"));
  CHECK_THROWS_WITH(run(CollectiveKind::all_reduce, kGiB, 16, 16), Catch::Contains("exceeds the 8 GPUs"));
  CHECK_THROWS_WITH(run(CollectiveKind::all_reduce, kGiB, 12, 5), Catch::Contains("must divide ranks"));
  CHECK_THROWS_AS(run(CollectiveKind::all_reduce, -1, 8), InputError);
  CHECK(run(CollectiveKind::all_reduce, kGiB, 12, 4).nodes == 3);
}

TEST_CASE("NVL72 keeps 64 ranks inside one NVLink domain", "[unit]") {
  const HardwareProfile gb300 = load("gb300-nvl72");
  const CollectiveCost c = run(CollectiveKind::all_to_all, kGiB, 64, 0, "", gb300);
  CHECK(c.nodes == 1);
  CHECK(c.nic_bytes_per_rank == 0);
  // The same exchange over 8 HGX B300 nodes pushes 7/8 of each buffer through one rail.
  const CollectiveCost hgx = run(CollectiveKind::all_to_all, kGiB, 64);
  CHECK(hgx.nodes == 8);
  CHECK(hgx.nic_bytes_per_rank == Approx(56.0 / 64 * kGiB));
  CHECK(hgx.time_s > 5 * c.time_s);
}

TEST_CASE("a cost book prices a collective asked again as the model does, request by request", "[unit]") {
  const ProfileCostBook book(b300());
  std::vector<CollectiveRequest> requests;
  for (const int per_node : {0, 4}) {
    for (const char* alg : {"", "ring"}) {
      for (const PxnChoice pxn : {PxnChoice::profile, PxnChoice::off}) {
        CollectiveRequest r;
        r.kind = CollectiveKind::all_reduce;
        r.bytes = 64 * kMiB;
        r.ranks = 16;
        r.ranks_per_node = per_node;
        r.algorithm = alg;
        r.pxn = pxn;
        requests.push_back(r);
      }
    }
  }
  CollectiveRequest other = requests.front();
  other.kind = CollectiveKind::reduce_scatter;
  requests.push_back(other);
  other.bytes = 32 * kMiB;
  requests.push_back(other);
  for (int round = 0; round < 2; ++round) {  // the second round reads the kept prices
    for (const CollectiveRequest& r : requests) {
      const CollectiveCost model = nccl().cost(b300(), r);
      const CommCost kept = book.collective(r);
      CHECK(kept.time_s == model.time_s);
      CHECK(kept.nvlink_bytes == model.nvlink_bytes_per_rank);
      CHECK(kept.nic_bytes == model.nic_bytes_per_rank);
    }
  }
}
