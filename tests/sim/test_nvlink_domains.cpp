// An NVLink domain is not a host: a GB200/GB300 NVL72 rack is 18 hosts of 4 GPUs in one 72-GPU
// domain, an HGX host one 8-GPU domain. Communicators are shaped by the domain, so expert
// parallelism inside a rack never touches the NIC.
#include <catch2/catch.hpp>

#include "models/plan/rank_layout.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// The Figure 8 DDP+EP scenario (N routed experts) on `profile` with `hosts` hosts of `per_host` GPUs.
Scenario on_profile(const std::string& profile, std::int64_t hosts, std::int64_t per_host, std::int64_t ep,
                    std::int64_t experts) {
  return load_scenario(
      test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
      {"hardware=" + test::source_path("hardware_profiles/" + profile + ".json"), "plan.nodes=" + std::to_string(hosts),
       "plan.gpus_per_node=" + std::to_string(per_host), "plan.expert_parallel.degree=" + std::to_string(ep),
       "architecture.moe.num_experts=" + std::to_string(experts), "architecture.num_layers=2",
       "plan.batch.global_batch_tokens=" + std::to_string(hosts * per_host * 16384)});
}

double a2a_bytes(const StepResult& r, LinkClass link) {
  return r.bytes_per_rank[static_cast<std::size_t>(CollectiveKind::all_to_all)][static_cast<std::size_t>(link)];
}

}  // namespace

TEST_CASE("A job's NVLink domain: its hosts spread evenly over the fewest domains", "[unit]") {
  ParallelPlan p;
  p.gpus_per_node = 4;
  p.domain_hosts = 18;  // NVL72
  p.nodes = 2;
  CHECK(p.domain_gpus() == 8);
  p.nodes = 18;
  CHECK(p.domain_gpus() == 72);
  p.nodes = 36;
  CHECK(p.domain_gpus() == 72);
  p.nodes = 24;  // two racks, 12 hosts in each
  CHECK(p.domain_gpus() == 48);
  p.nodes = 19;  // a prime count of hosts cannot be split evenly: one host per domain
  CHECK(p.domain_gpus() == 4);
  p.domain_hosts = 1;  // HGX: the host is the domain
  p.gpus_per_node = 8;
  p.nodes = 32;
  CHECK(p.domain_gpus() == 8);
}

TEST_CASE("Communicators count their members per NVLink domain, not per host", "[unit]") {
  ParallelPlan p;
  p.gpus_per_node = 4;
  p.domain_hosts = 18;
  p.nodes = 16;  // 64 GPUs in one rack
  p.ep = 64;
  CHECK(communicator_shape(p, Communicator::ep_mp).ranks_per_node == 64);  // the rack holds the whole group
  p.nodes = 36;                                                            // 144 GPUs, two racks
  p.ep = 72;
  CHECK(communicator_shape(p, Communicator::ep_mp).ranks_per_node == 72);
  CHECK(communicator_shape(p, Communicator::dp).ranks_per_node == 72);
  p.ep = 144;
  CHECK(communicator_shape(p, Communicator::ep_mp).ranks == 144);
  CHECK(communicator_shape(p, Communicator::ep_mp).ranks_per_node == 72);  // two racks
  p.ep = 8;                                                                // EP-DP: stride 8, 9 per rack
  CHECK(communicator_shape(p, Communicator::ep_dp).ranks == 18);
  CHECK(communicator_shape(p, Communicator::ep_dp).ranks_per_node == 9);
  // HGX: unchanged, the host is the domain.
  ParallelPlan h;
  h.nodes = 4;
  h.gpus_per_node = 8;
  h.ep = 8;
  CHECK(communicator_shape(h, Communicator::ep_mp).ranks_per_node == 8);
  CHECK(communicator_shape(h, Communicator::ep_dp).ranks_per_node == 1);
  CHECK(communicator_shape(h, Communicator::dp).ranks_per_node == 8);
}

TEST_CASE("EP inside one GB200 NVL72 rack sends no EP bytes over the NIC, EP over two racks does", "[unit]") {
  for (const std::int64_t ep : {8, 32, 64}) {
    CAPTURE(ep);
    const Scenario s = on_profile("gb200-nvl72", ep / 4, 4, ep, 128);
    const StepResult r = simulate(s).result;
    CHECK(a2a_bytes(r, LinkClass::nvlink) > 0);
    CHECK(a2a_bytes(r, LinkClass::nic) == 0);
  }
  const StepResult two_racks = simulate(on_profile("gb200-nvl72", 36, 4, 144, 144)).result;
  CHECK(a2a_bytes(two_racks, LinkClass::nic) > 0);
  const StepResult gb300 = simulate(on_profile("gb300-nvl72", 16, 4, 64, 128)).result;
  CHECK(a2a_bytes(gb300, LinkClass::nic) == 0);
}

TEST_CASE("GB200 EP8 over two hosts of one rack is as fast as B200 EP8 in one host", "[unit]") {
  // Both GPUs have NVLink 5 at the same bandwidth; the GB200 part's sustained rates are at least
  // B200's (hardware_profiles/), so the rack can only be faster on the same job.
  const StepResult b200 = simulate(on_profile("b200-hgx", 1, 8, 8, 64)).result;
  const StepResult gb200 = simulate(on_profile("gb200-nvl72", 2, 4, 8, 64)).result;
  CHECK(a2a_bytes(gb200, LinkClass::nic) == 0);
  CHECK(a2a_bytes(gb200, LinkClass::nvlink) == Approx(a2a_bytes(b200, LinkClass::nvlink)));
  CHECK(gb200.step_time_s <= b200.step_time_s);
}
