// EP transports (models/costs/ep_transports.hpp): each against the published measurement its
// profile numbers come from, the plan key and its refusals, and what a transport changes in a layer.
#include <catch2/catch.hpp>

#include "models/common/errors.hpp"
#include "models/common/json_reader.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/layer_work.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
HardwareProfile profile(const std::string& file) { return test::bundled_profile(file); }

// DeepEP's benchmark setting (README, EPv2): 8192 tokens per rank, hidden 7168, top-8 of 256
// experts; BF16 rows (its combine).
EpTransferRequest deepep_benchmark(int ranks, int per_node) {
  EpTransferRequest r;
  r.top_k = 8;
  r.experts = 256;
  r.bytes = 8192.0 * r.top_k * 7168 * 2;
  r.ranks = ranks;
  r.ranks_per_node = per_node;
  return r;
}

constexpr const char* kEp8 = "scenarios/fig8/moe-ddp-ep8.json";
}  // namespace

TEST_CASE("A token reaches a rank holding one of its K distinct experts with the hypergeometric odds", "[unit]") {
  // 4 experts, 2 held, K = 2: both miss with probability (2/4)(1/3).
  CHECK(hit_probability(4, 2, 2) == Approx(1 - 1.0 / 6));
  CHECK(hit_probability(8, 8, 1) == 1);  // every expert held
  CHECK(hit_probability(8, 1, 1) == Approx(1.0 / 8));
  CHECK(hit_probability(256, 128, 8) == Approx(1 - 0.0035).margin(0.0005));  // two nodes, top-8 of 256
}

TEST_CASE("DeepEP on B200 reproduces the README's SM100 logical bandwidths from the profile", "[validation]") {
  const HardwareProfile b200 = profile("b200-hgx.json");
  const ProfileCostBook book(b200);
  SECTION("EP8 inside a node: 643 (dispatch) and 675 GB/s (combine) at 24 SMs") {
    const EpTransferRequest r = deepep_benchmark(8, 8);
    const CommCost c = book.ep_transfer(EpTransport::deepep, r);
    // Logical bytes: each token once per rank holding one of its experts, the rank itself included.
    const double logical = r.bytes / r.top_k * 8 * hit_probability(256, 32, 8);
    const double GBps = logical / c.time_s / 1e9;
    CHECK(GBps == Approx(643).epsilon(0.05));
    CHECK(GBps == Approx(675).epsilon(0.05));
    CHECK(c.nic_bytes == 0);
    CHECK(c.ctas == 24);
  }
  SECTION("EP 8 x 2 over CX7-class 400 Gb/s rails: 90 GB/s logical, half of it the local node's") {
    const EpTransferRequest r = deepep_benchmark(16, 8);
    const CommCost c = book.ep_transfer(EpTransport::deepep, r);
    const double logical = r.bytes / r.top_k * 2 * hit_probability(256, 128, 8);
    CHECK(logical / c.time_s / 1e9 == Approx(90).epsilon(0.05));
    // Each token crosses the rail once per remote node, not once per routed copy.
    CHECK(c.nic_bytes == Approx(r.bytes / r.top_k * hit_probability(256, 128, 8)));
    // In each node the token reaches the 7 ranks other than the one holding it, each with q_rank.
    CHECK(c.nvlink_bytes == Approx(r.bytes / r.top_k * 2 * 7 * hit_probability(256, 16, 8)));
    const CommCost nccl = book.ep_transfer(EpTransport::nccl_all_to_all, r);
    CHECK(c.nic_bytes < nccl.nic_bytes / 3);
  }
}

TEST_CASE("Every transport resolves the group's shape as the collective model does and refuses a ragged one",
          "[unit]") {
  const HardwareProfile b200 = profile("b200-hgx.json");  // the book keeps a reference to it
  const ProfileCostBook book(b200);
  // 8 ranks, 3 per NVLink domain: not whole domains (DeepEP computed 2.67 nodes from it).
  const EpTransferRequest ragged = deepep_benchmark(8, 3);
  for (const EpTransport t : all_ep_transports()) {
    INFO(name_of(t));
    CHECK_THROWS_AS(book.ep_transfer(t, ragged), InputError);
    try {
      book.ep_transfer(t, ragged);
    } catch (const ProfileGapError&) {
      FAIL("a ragged group is the request's error, not a gap in the profile");
    } catch (const InputError&) {}
  }
  // 0 per node: as many as one domain holds (8), so EP16 spans two domains.
  const CommCost implied = book.ep_transfer(EpTransport::deepep, deepep_benchmark(16, 0));
  const CommCost given = book.ep_transfer(EpTransport::deepep, deepep_benchmark(16, 8));
  CHECK(implied.time_s == given.time_s);
  CHECK(implied.nic_bytes == given.nic_bytes);
}

TEST_CASE("A transport the profile has no numbers for is a gap in the profile, named by its path", "[unit]") {
  const HardwareProfile h200 = profile("h200-hgx.json");  // measured symmetric memory, no DeepEP
  const ProfileCostBook book(h200);
  try {
    book.ep_transfer(EpTransport::deepep, deepep_benchmark(8, 8));
    FAIL("priced DeepEP without numbers");
  } catch (const ProfileGapError& e) {
    CHECK(e.path() == "interconnect.ep_transports.deepep");
  }
  CHECK_NOTHROW(book.ep_transfer(EpTransport::symmetric_memory, deepep_benchmark(8, 8)));
}

TEST_CASE("Row-wise symmetric memory takes Table 7's time over NCCL's all-to-all and holds fewer SMs", "[validation]") {
  const HardwareProfile b300 = profile("b300-hgx.json");
  const ProfileCostBook book(b300);
  EpTransferRequest r;
  r.bytes = 16384.0 * 4 * 4096 * 2;  // Figure 8: 16,384 tokens, top-4, d 4096, BF16
  r.ranks = 8;
  r.ranks_per_node = 8;
  r.top_k = 4;
  r.experts = 128;
  const CommCost nccl = book.ep_transfer(EpTransport::nccl_all_to_all, r);
  const CommCost symm = book.ep_transfer(EpTransport::symmetric_memory, r);
  // Olmo-core report Table 7 (B300): row-wise dispatch 2.30 vs 1.96 ms, combine 2.42 vs 1.97 ms.
  CHECK(symm.time_s / nccl.time_s >= 2.30 / 1.96 - 0.01);
  CHECK(symm.time_s / nccl.time_s <= 2.42 / 1.97 + 0.01);
  CHECK(symm.nvlink_bytes == nccl.nvlink_bytes);  // every routed copy travels in both
  CHECK(symm.ctas < nccl.ctas);
  CHECK(ep_transport_model(EpTransport::symmetric_memory).fuses_permutation());
  CHECK_FALSE(ep_transport_model(EpTransport::nccl_all_to_all).fuses_permutation());
}

TEST_CASE("A transport that writes rows into their experts' slots drops the layer's permutation kernels", "[unit]") {
  Scenario sc = load_scenario(test::source_path(kEp8), {});
  const ProfileCostBook book(sc.hardware);
  const double tokens = 16384;
  const std::vector<double> rows(static_cast<std::size_t>(sc.arch.moe->num_experts / sc.plan.ep),
                                 tokens * dbl(sc.arch.moe->top_k) / dbl(sc.arch.moe->num_experts / sc.plan.ep));
  sc.plan.ep_transport = EpTransport::nccl_all_to_all;
  const LayerWork nccl = layer_work(sc.arch, sc.plan, book, 1, tokens, rows);
  sc.plan.ep_transport = EpTransport::symmetric_memory;
  const LayerWork symm = layer_work(sc.arch, sc.plan, book, 1, tokens, rows);
  const double d = dbl(sc.arch.d_model), K = dbl(sc.arch.moe->top_k);
  const double permute = book.memory((tokens * K * d + tokens * d) * 2, MemoryKernel::permute);
  CHECK(nccl.pre.fwd - symm.pre.fwd == Approx(permute));
  CHECK(nccl.post.fwd - symm.post.fwd == Approx(permute));
  CHECK(nccl.experts.fwd == symm.experts.fwd);
}

TEST_CASE("The plan picks its EP transport, a profile without its numbers refuses it", "[unit]") {
  CHECK(load_scenario(test::source_path(kEp8), {}).plan.ep_transport == EpTransport::symmetric_memory);
  CHECK(load_scenario(test::source_path(kEp8), {"design=fsdp"}).plan.ep_transport == EpTransport::nccl_all_to_all);
  CHECK(load_scenario(test::source_path(kEp8), {"plan.expert_parallel.transport=deepep"}).plan.ep_transport ==
        EpTransport::deepep);
  try {
    (void)load_scenario(test::source_path(kEp8), {"plan.expert_parallel.transport=nvshmem"});
    FAIL("an unknown transport was accepted");
  } catch (const InputError& e) {
    CHECK(e.path() == "plan.expert_parallel.transport");
    CHECK_THAT(e.what(), Catch::Contains("nccl_all_to_all") && Catch::Contains("deepep"));
  }
  try {
    (void)load_scenario(test::source_path(kEp8),
                        {"hardware=../../hardware_profiles/h100-hgx.json", "plan.expert_parallel.transport=deepep"});
    FAIL("a transport the profile has no numbers for was accepted");
  } catch (const InputError& e) {
    CHECK(e.path() == "plan.expert_parallel.transport");
    CHECK_THAT(e.what(), Catch::Contains("allowed here: nccl_all_to_all, nccl_all_gather, symmetric_memory"));
    CHECK(e.infeasible());
  }
}

TEST_CASE("Every transport replays the Figure 8 EP8 step, DeepEP sends fewer bytes than NCCL", "[unit]") {
  const auto run = [](const std::string& transport) {
    return simulate(load_scenario(test::source_path(kEp8), {"plan.expert_parallel.transport=" + transport})).result;
  };
  const StepResult nccl = run("nccl_all_to_all"), symm = run("symmetric_memory"), deepep = run("deepep");
  const auto a2a = static_cast<std::size_t>(CollectiveKind::all_to_all);
  const auto nvlink = static_cast<std::size_t>(LinkClass::nvlink);
  CHECK(deepep.bytes_per_rank[a2a][nvlink] < nccl.bytes_per_rank[a2a][nvlink]);
  CHECK(symm.bytes_per_rank[a2a][nvlink] == nccl.bytes_per_rank[a2a][nvlink]);
  for (const StepResult* r : {&nccl, &symm, &deepep}) CHECK(r->mfu > 0.2);
}

TEST_CASE("Group-limited routing caps the nodes DeepEP sends a token to", "[unit]") {
  // DeepSeek-V3's setting: 256 experts in 8 groups, a token in at most 4 of them; EP64 over 8
  // nodes of 8, one group per node: each other node is reached with odds 4/8, not 1 - C(224, 8)/C(256, 8).
  const HardwareProfile b300 = profile("b300-hgx.json");
  const ProfileCostBook book(b300);
  EpTransferRequest r = deepep_benchmark(64, 8);
  const CommCost free = book.ep_transfer(EpTransport::deepep, r);
  r.expert_groups = 8;
  r.groups_per_token = 4;
  const CommCost limited = book.ep_transfer(EpTransport::deepep, r);
  const double tokens = r.bytes / r.top_k;
  CHECK(free.nic_bytes == Approx(tokens * 7 * hit_probability(256, 32, 8)));
  CHECK(limited.nic_bytes == Approx(tokens * 7 * 0.5));
  CHECK(limited.nvlink_bytes == free.nvlink_bytes);  // inside a node every rank is reached as before
  CHECK(limited.time_s < free.time_s);
  // A limit wider than the nodes a token reaches anyway changes nothing.
  r.groups_per_token = 8;
  CHECK(book.ep_transfer(EpTransport::deepep, r).nic_bytes == Approx(free.nic_bytes));
}
