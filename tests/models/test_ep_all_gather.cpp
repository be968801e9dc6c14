// Megatron-Core's all-gather token dispatcher (EpTransport::nccl_all_gather): its collectives on a
// hand-computed request, what it changes in a layer (bytes, permutation kernels, buffers), the
// replayed step, its refusals, and the stacks that name their dispatcher.
#include <catch2/catch.hpp>

#include "models/common/errors.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/layer_work.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/working_terms.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
constexpr const char* kEp8 = "scenarios/fig8/moe-ddp-ep8.json";
constexpr double kTokens = 16384;  // a Figure 8 microbatch on one rank
const std::string kAllGather = "plan.expert_parallel.transport=nccl_all_gather";

std::vector<double> even_rows(const Scenario& sc) {
  const double local = dbl(sc.arch.moe->num_experts / sc.plan.ep);
  return std::vector<double>(static_cast<std::size_t>(local),
                             kTokens * dbl(sc.arch.moe->top_k) / dbl(sc.arch.moe->num_experts / sc.plan.ep));
}
}  // namespace

TEST_CASE("The all-gather dispatcher all-gathers each rank's tokens toward the experts and reduce-scatters back",
          "[unit]") {
  const HardwareProfile b300 = test::bundled_profile("b300-hgx.json");
  const ProfileCostBook book(b300);
  EpTransferRequest r;
  r.bytes = kTokens * 4096 * 2;  // the rank's tokens once: d 4096, BF16
  r.ranks = 8;
  r.ranks_per_node = 8;
  r.top_k = 4;
  r.experts = 128;
  CollectiveRequest gather;
  gather.kind = CollectiveKind::all_gather;
  gather.bytes = 8 * r.bytes;  // nccl-tests: the whole gathered buffer
  gather.ranks = 8;
  gather.ranks_per_node = 8;
  CollectiveRequest scatter = gather;
  scatter.kind = CollectiveKind::reduce_scatter;

  const CommCost toward = book.ep_transfer(EpTransport::nccl_all_gather, r);
  CHECK(toward.time_s == book.collective(gather).time_s);
  CHECK(toward.nvlink_bytes == Approx(7 * r.bytes));  // each token to the 7 other ranks
  r.toward_experts = false;
  const CommCost back = book.ep_transfer(EpTransport::nccl_all_gather, r);
  CHECK(back.time_s == book.collective(scatter).time_s);
  CHECK(back.nvlink_bytes == Approx(7 * r.bytes));
  // The all-to-all transports move the same rows either way.
  r.bytes *= r.top_k;
  const CommCost a2a_back = book.ep_transfer(EpTransport::nccl_all_to_all, r);
  r.toward_experts = true;
  CHECK(book.ep_transfer(EpTransport::nccl_all_to_all, r).time_s == a2a_back.time_s);
  CHECK(ep_transport_model(EpTransport::nccl_all_gather).gathers_tokens());
  CHECK_FALSE(ep_transport_model(EpTransport::nccl_all_to_all).gathers_tokens());
}

TEST_CASE("Under the all-gather dispatcher a layer moves its tokens once and permutes out of the gathered rows",
          "[unit]") {
  Scenario sc = load_scenario(test::source_path(kEp8), {kAllGather});
  const ProfileCostBook book(sc.hardware);
  const std::vector<double> rows = even_rows(sc);
  const LayerWork gathered = layer_work(sc.arch, sc.plan, book, 1, kTokens, rows);
  sc.plan.ep_transport = EpTransport::symmetric_memory;  // no permutation kernels at all
  const LayerWork fused = layer_work(sc.arch, sc.plan, book, 1, kTokens, rows);
  const double d = dbl(sc.arch.d_model), e = 2, K = dbl(sc.arch.moe->top_k), n = dbl(sc.plan.ep);
  const double received = kTokens * K;  // even routing: the rank computes K x T rows
  CHECK(gathered.a2a_bytes == kTokens * d * e);
  CHECK(gathered.dispatch_bytes == gathered.a2a_bytes);
  // Permute: read and write each of its rows; unpermute: zero the [n x T, d] output, then
  // scatter-add each row (read it, read and write its place).
  CHECK(gathered.pre.fwd - fused.pre.fwd == Approx(book.memory(2 * received * d * e, MemoryKernel::permute)));
  CHECK(gathered.post.fwd - fused.post.fwd ==
        Approx(book.memory((n * kTokens + 3 * received) * d * e, MemoryKernel::permute)));
  CHECK(gathered.experts.fwd == fused.experts.fwd);
}

TEST_CASE("The all-gather dispatcher keeps a global gather buffer and stages the unpermuted combine", "[unit]") {
  const Scenario sc = load_scenario(test::source_path(kEp8), {kAllGather});
  RoutedRows routed;
  routed.computed = kTokens * dbl(sc.arch.moe->top_k);
  const double row = dbl(sc.arch.d_model) * 2, n = dbl(sc.plan.ep);
  const std::vector<LedgerItem> kept = ep_static_buffers(sc.arch, sc.plan, kTokens, 4, routed);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].bytes == n * kTokens * row);  // one buffer for every MoE block
  const LedgerItem staging = ep_transient_staging(sc.arch, sc.plan, kTokens, routed, true);
  CHECK(staging.bytes == (n * kTokens + routed.computed) * row);
}

TEST_CASE("A step under the all-gather dispatcher runs EP all-gathers and reduce-scatters, no all-to-all", "[unit]") {
  const StepResult gathered = simulate(load_scenario(test::source_path(kEp8), {kAllGather})).result;
  const StepResult a2a =
      simulate(load_scenario(test::source_path(kEp8), {"plan.expert_parallel.transport=nccl_all_to_all"})).result;
  const auto at = [](const StepResult& r, CollectiveKind k) {
    return r.bytes_per_rank[static_cast<std::size_t>(k)][static_cast<std::size_t>(LinkClass::nvlink)];
  };
  CHECK(at(gathered, CollectiveKind::all_to_all) == 0);
  CHECK(at(gathered, CollectiveKind::all_gather) > at(a2a, CollectiveKind::all_gather));
  CHECK(at(gathered, CollectiveKind::reduce_scatter) > 0);
  CHECK(gathered.mfu > 0.2);
  // Top-4 of 128 over EP 8: a token reaches 7 ranks in the gather and about 3.5 in the all-to-all.
  CHECK(gathered.step_time_s > a2a.step_time_s);
}

TEST_CASE("The all-gather dispatcher refuses expert TP and FP8 dispatch, naming the key", "[unit]") {
  const auto refused = [](std::vector<std::string> sets) {
    sets.push_back(kAllGather);
    try {
      (void)load_scenario(test::source_path(kEp8), sets);
    } catch (const InputError& e) {
      return e.path();
    }
    return std::string("accepted");
  };
  CHECK(refused({"plan.expert_parallel.tensor_degree=2"}) == "plan.expert_parallel.transport");
  CHECK(refused({"plan.precision.linears.routed_expert=mxfp8", "plan.precision.ep_dispatch=mxfp8"}) ==
        "plan.precision.ep_dispatch");
}

TEST_CASE("Megatron-Core and torchtitan name their EP dispatcher and dropless routing", "[unit][stacks]") {
  for (const char* stack : {"megatron-core", "megatron-bridge", "torchtitan"}) {
    INFO(stack);
    const Scenario sc = load_scenario(test::source_path(kEp8), {std::string("plan.stack=\"") + stack + "\""});
    CHECK(sc.plan.ep_transport == EpTransport::nccl_all_to_all);  // the DDP design's own is symmetric memory
    CHECK(sc.plan.routing.dropless);
  }
  // A plan's own transport wins over its stack's.
  CHECK(load_scenario(test::source_path(kEp8), {"plan.stack=\"megatron-core\"", kAllGather}).plan.ep_transport ==
        EpTransport::nccl_all_gather);
}
