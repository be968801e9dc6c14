// HybridEP (models/costs/ep_transports.cpp): the profile's rates by SMs give back the benchmark
// they come from, the deduplicated bytes, the RDMA bound across NVLink domains, and the plan's
// SM key with its refusals.
#include <catch2/catch.hpp>

#include "models/common/errors.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// HybridEP's benchmark (DeepEP hybrid-ep branch, tests/test_hybrid_ep.py): 4096 tokens per rank,
// hidden 7168, top-8 of 8 local experts per rank, BF16 rows.
EpTransferRequest benchmark(int ranks, int per_domain, int sms) {
  EpTransferRequest r;
  r.top_k = 8;
  r.experts = 8.0 * ranks;
  r.bytes = 4096.0 * r.top_k * 7168 * 2;
  r.ranks = ranks;
  r.ranks_per_node = per_domain;
  r.sms = sms;
  return r;
}

// The benchmark's algorithm bandwidth: rows a rank receives, its own included, over the time.
double algorithm_GBps(const EpTransferRequest& r, const CommCost& c) {
  const double tokens_bytes = r.bytes / r.top_k;
  const double received = tokens_bytes * r.ranks * hit_probability(r.experts, r.experts / r.ranks, r.top_k);
  return received / c.time_s / 1e9;
}

constexpr const char* kQwen = "scenarios/gb200-nvl72-qwen3-30b-a3b-ep32.json";

}  // namespace

TEST_CASE("HybridEP on GB200 gives back its NVL36 benchmark's bandwidths by SMs", "[validation]") {
  const HardwareProfile gb200 = test::bundled_profile("gb200-nvl72.json");
  const ProfileCostBook book(gb200);
  // Megatron-LM's GB200 write-up, section 2.5 figure: EP36, top-8. The table's rates include the
  // fixed cost once; the model adds the profile's base latency (8.4 us against ~0.6 ms) on top.
  const std::vector<std::tuple<int, double, double>> measured{
      {4, 213.95, 185.44}, {8, 422.78, 386.59}, {16, 694.1, 617.62}, {32, 714.66, 657.72}};
  for (const auto& [sms, dispatch, combine] : measured) {
    INFO(sms << " SMs");
    EpTransferRequest r = benchmark(36, 36, sms);
    CHECK(algorithm_GBps(r, book.ep_transfer(EpTransport::hybridep, r)) == Approx(dispatch).epsilon(0.03));
    r.toward_experts = false;
    CHECK(algorithm_GBps(r, book.ep_transfer(EpTransport::hybridep, r)) == Approx(combine).epsilon(0.03));
  }
  const auto at = [&](int sms) {
    const EpTransferRequest r = benchmark(36, 36, sms);
    return algorithm_GBps(r, book.ep_transfer(EpTransport::hybridep, r));
  };
  CHECK(at(24) == Approx((694.1 + 714.66) / 2).epsilon(0.03));  // linear between 16 and 32
  CHECK(at(2) == Approx(213.95 / 2).epsilon(0.03));             // proportional below 4
  CHECK(at(64) == Approx(at(32)));                              // saturated above 32
  const CommCost c = book.ep_transfer(EpTransport::hybridep, benchmark(36, 36, 0));
  CHECK(c.ctas == 32);  // HybridEP's default inside one NVLink domain
  CHECK(c.nic_bytes == 0);
  // NVLink carries the rows for the 35 other ranks: DeepEP's deduplicated bytes.
  const CommCost deepep = book.ep_transfer(EpTransport::deepep, benchmark(36, 36, 0));
  CHECK(c.nvlink_bytes == Approx(deepep.nvlink_bytes));
}

TEST_CASE("HybridEP across DGX H100 nodes is bound by the rail at the measured fraction of line rate", "[validation]") {
  const HardwareProfile h100 = test::bundled_profile("h100-hgx.json");
  const ProfileCostBook book(h100);
  // The same figure, 4 x DGX H100 (EP32, one 400 Gb/s NIC per GPU): dispatch at 8 blocks moves
  // 44.2 GB/s over the NIC and 121.3 GB/s of algorithm bandwidth, combine 45 and 123.4.
  EpTransferRequest r = benchmark(32, 8, 0);
  const CommCost dispatch = book.ep_transfer(EpTransport::hybridep, r);
  CHECK(dispatch.ctas == 8);  // HybridEP's default across domains
  CHECK(dispatch.nic_bytes / dispatch.time_s / 1e9 == Approx(44.2).epsilon(0.03));
  // Not fitted: the algorithm bandwidth follows from the deduplication odds (each token reaches
  // 2.7 of the 3 other nodes and 7.2 of the 32 ranks).
  CHECK(algorithm_GBps(r, dispatch) == Approx(121.3).epsilon(0.05));
  r.toward_experts = false;
  const CommCost combine = book.ep_transfer(EpTransport::hybridep, r);
  CHECK(combine.nic_bytes / combine.time_s / 1e9 == Approx(45.0).epsilon(0.03));
  CHECK(algorithm_GBps(r, combine) == Approx(123.4).epsilon(0.05));
  // Inside one DGX H100 (EP8) at 16 SMs: 368.9 GB/s.
  const EpTransferRequest node = benchmark(8, 8, 16);
  CHECK(algorithm_GBps(node, book.ep_transfer(EpTransport::hybridep, node)) == Approx(368.9).epsilon(0.03));
}

TEST_CASE("A profile without HybridEP numbers refuses it and so does an SM count the GPU lacks", "[unit]") {
  const HardwareProfile a100 = test::bundled_profile("a100-sxm-80gb.json");
  const ProfileCostBook book(a100);
  try {
    book.ep_transfer(EpTransport::hybridep, benchmark(8, 8, 0));
    FAIL("priced HybridEP on A100");
  } catch (const ProfileGapError& e) {
    CHECK(e.path() == "interconnect.ep_transports.hybridep");
  }
  const InputError none =
      test::load_error(test::source_path(kQwen),
                       {"hardware=../hardware_profiles/a100-sxm-80gb.json", "plan.expert_parallel.transport=hybridep"});
  CHECK(none.path() == "plan.expert_parallel.transport");
  CHECK_THAT(none.what(), Catch::Contains("needs interconnect.ep_transports.hybridep"));
  const InputError sms = test::load_error(test::source_path(kQwen),
                                          {"plan.expert_parallel.transport=hybridep", "plan.expert_parallel.sms=200"});
  CHECK(sms.path() == "plan.expert_parallel.sms");
  CHECK_THAT(sms.what(), Catch::Contains("200 SMs exceeds the 148"));
  const InputError other = test::load_error(test::source_path(kQwen), {"plan.expert_parallel.sms=16"});
  CHECK(other.path() == "plan.expert_parallel.sms");
  CHECK_THAT(other.what(), Catch::Contains("modelled for \"hybridep\""));
  // Across NVLink domains without the profile's RDMA rates.
  const InputError rdma = test::load_error(
      test::source_path(kQwen),
      {"plan.expert_parallel.transport=hybridep", "hardware.interconnect.intra_node.domain_gpus.value=4",
       "hardware.interconnect.ep_transports.hybridep.rdma_dispatch_efficiency_by_sms=null",
       "hardware.interconnect.ep_transports.hybridep.rdma_combine_efficiency_by_sms=null"});
  CHECK(rdma.path() == "plan.expert_parallel.transport");
  CHECK_THAT(rdma.what(), Catch::Contains("across NVLink domains needs"));
}

TEST_CASE("A step on HybridEP: DeepEP's bytes, its SMs, faster with more of them", "[unit]") {
  const auto run = [](const std::vector<std::string>& sets) {
    return simulate(load_scenario(test::source_path(kQwen), sets)).result;
  };
  const StepResult deepep = run({"plan.expert_parallel.transport=deepep"});
  const StepResult h32 = run({"plan.expert_parallel.transport=hybridep"});
  const StepResult h8 = run({"plan.expert_parallel.transport=hybridep", "plan.expert_parallel.sms=8"});
  const auto a2a = static_cast<std::size_t>(CollectiveKind::all_to_all);
  const auto nvlink = static_cast<std::size_t>(LinkClass::nvlink);
  CHECK(h32.bytes_per_rank[a2a][nvlink] == Approx(deepep.bytes_per_rank[a2a][nvlink]));
  CHECK(h8.step_time_s > h32.step_time_s);
  CHECK(h32.mfu > 0.2);
}
