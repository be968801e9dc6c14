// Whole small steps worked out by hand on 2 ranks and 2 dense layers with round-number costs: every
// GEMM 1 ms, every collective 3 ms; memory-bound kernels and attention free (the first two
// goldens) or 0.5 ms and 0.25 ms each (the others, which time FP32 accumulation, the optimizer
// and weight rebuild, FSDP's copy-out and copy-in, and the split by kind of task).
#include <catch2/catch.hpp>

#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
Scenario tiny(const std::string& design, double bucket_cap_mib, std::int64_t global_tokens) {
  test::TempDir dir;
  nlohmann::json doc = {{"architecture", test::tiny_dense_architecture()},
                        {"plan",
                         {{"design", design},
                          {"nodes", 1},
                          {"gpus_per_node", 2},
                          {"ddp", {{"distributed_optimizer", true}, {"bucket_cap_MiB", bucket_cap_mib}}},
                          {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", global_tokens}}}}},
                        {"hardware", read_json_file(test::source_path("hardware_profiles/b300-hgx.json"))}};
  return load_scenario(dir.write("tiny.json", doc.dump()), {});
}

Scenario tiny_ddp(double bucket_cap_mib) { return tiny("ddp", bucket_cap_mib, 64); }

ReplayResult run(const Scenario& s, BuiltStep& step, const test::FakeCosts& costs = {}) {
  const Inventory inv = build_inventory(s.arch);
  step = build_step(s.arch, inv, s.plan, costs, SimOptions{});
  return replay(step.graph, *fair_share(0));
}

test::FakeCosts with_kernels() {
  test::FakeCosts c;
  c.memory_s = 0.5e-3;
  c.attention_s = 0.25e-3;
  return c;
}

double phase(const TimelineMetrics& m, PhaseTag p) { return m.ranks[0].exposed[static_cast<std::size_t>(p)]; }
double kind(const TimelineMetrics& m, TaskKind k) { return m.ranks[0].exposed_by_kind[static_cast<std::size_t>(k)]; }
}  // namespace

TEST_CASE("DDP golden: one bucket launches after the last microbatch's backward", "[golden]") {
  // Per microbatch: forward = block 4 + block 4 + head 1 = 9 ms; backward = head 2 + 8 + 8 =
  // 18 ms. m = 2: backward of microbatch 1 ends at 54. Then, on the data-parallel stream in
  // issue order, the single bucket's all-reduce [54, 57], the loss all-reduce [57, 60], the
  // grad-norm all-reduce [60, 63] (memory kernels are free here: bucket zeroing and divide,
  // norms, clip, update) and the weight-rebuild all-gather [63, 66].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(250), step);
  CHECK(step.ranks.size() == 1);
  CHECK(step.microbatches == 2);
  CHECK(r.makespan == Approx(0.066));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::forward)] == Approx(0.018));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::backward)] == Approx(0.036));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.003));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::optimizer)] == Approx(0.006));  // loss + grad norm
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::weight_rebuild)] == Approx(0.003));
}

TEST_CASE("DDP golden: per-tensor buckets overlap the last backward, then queue on the stream", "[golden]") {
  // Every tensor its own bucket (19 of them). Head buckets (2) start when the head backward
  // ends at 38: [38, 44]. Layer 1's 8 buckets are ready at 46: [46, 70]. Layer 0's 8 and the
  // embedding's are ready at 54 but the stream is busy: [70, 97]. Loss [97, 100], grad norm
  // [100, 103], all-gather [103, 106].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(1e-9), step);
  CHECK(r.makespan == Approx(0.106));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.043));
  CHECK(m.ranks[0].busy[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.057));
}

TEST_CASE("DDP golden with kernels: FP32 accumulation every microbatch, sharded update and rebuild", "[golden]") {
  // Memory kernels 0.5 ms, attention 0.25 ms. A block's forward: 4 GEMMs + attention + 2
  // elementwise = 5.25; its backward 8 GEMMs + attention + 2 elementwise = 9.25. Embedding 0.5
  // each way; head forward 1 GEMM + 2 elementwise = 2.0, backward 2 GEMMs + 2 elementwise = 3.0.
  // The step starts by zeroing the one FP32 bucket [0, 0.5]. Forward per microbatch 0.5 + 2 x
  // 5.25 + 2.0 = 13.0. Backward: head 3.0, blocks 9.25 each, embedding 0.5, and after each of the
  // 4 units its FP32 accumulation (0.5) on the compute stream: 3.0 + 18.5 + 0.5 + 2.0 = 24.0.
  // m = 2: the compute ends at 74.5. The bucket (ready with the embedding) is divided [74.5, 75]
  // and all-reduced [75, 78]; the loss all-reduce follows it on the stream [78, 81]; the gradient
  // norms [78, 78.5] wait only for the bucket, their all-reduce for the stream [81, 84]; clip
  // [84, 84.5], sharded update [84.5, 85], rebuild: pack [85, 85.5], all-gather [85.5, 88.5], copy
  // out [88.5, 89].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(250), step, with_kernels());
  CHECK(r.makespan == Approx(0.089));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(phase(m, PhaseTag::forward) == Approx(0.026));
  CHECK(phase(m, PhaseTag::backward) == Approx(0.044));
  CHECK(phase(m, PhaseTag::accumulate) == Approx(0.0045));  // zeroing + 4 units x 2 microbatches x 0.5
  CHECK(phase(m, PhaseTag::grad_sync) == Approx(0.0035));   // divide + all-reduce
  // norms 0.5, the loss all-reduce's exposed [78.5, 81] 2.5, grad norm 3, clip 0.5, update 0.5
  CHECK(phase(m, PhaseTag::optimizer) == Approx(0.007));
  CHECK(phase(m, PhaseTag::weight_rebuild) == Approx(0.004));
  CHECK(m.ranks[0].idle == Approx(0).margin(1e-12));
  // By kind: GEMM/attention blocks 2 x (12.5 + 21.5) = 68; memory-bound: zeroing 0.5, embedding
  // 2 x 1.0, accumulation 2 x 2.0, divide 0.5, norms, clip, update 1.5, pack and copy out 1.0 =
  // 9.5; collectives 3 + 2.5 + 3 + 3 = 11.5.
  CHECK(kind(m, TaskKind::compute) == Approx(0.068));
  CHECK(kind(m, TaskKind::memory) == Approx(0.0095));
  CHECK(kind(m, TaskKind::collective) == Approx(0.0115));
}

TEST_CASE("FSDP golden: copy-in streams, one communicator for gathers and reduce-scatters, kept LM head", "[golden]") {
  // m = 1, prefetch 1, units: embedding, 2 blocks, head (kernel times as in the DDP golden). Each
  // gather's copy-in (cast + copy, 0.5 each) runs on its own stream, at half rate while a compute
  // kernel shares the SMs; gathers and reduce-scatters share one stream (one communicator).
  // Forward: copy-in(emb) [0, 1], G(emb) [1, 4], copy-out [4, 4.5], emb [4.5, 5.5];
  //   copy-in(L0) [1, 2], G(L0) [4, 7], copy-out [7, 7.5], L0 [7.5, 14.75];
  //   copy-in(L1) waits for copy-out(emb): [4.5, 6] beside the embedding, G(L1) [7, 10], copy-out
  //   [14.75, 15.25], L1 [15.25, 20.5];
  //   copy-in(head) waits for copy-out(L0): [7.5, 9.5] at half rate, G(head) [10, 13], copy-out
  //   [20.5, 21], head [21, 23].
  // Backward: the head stays gathered; its pre-backward prefetches L1: copy-in [9.5, 11.5] (at
  // half rate beside L0), G(L1) [13, 16]. Head bwd [23, 26]; reduce-scatter copy-in on the compute
  // stream [26, 26.5]; RS(head) [26.5, 29.5]. Copy-out(L1) [26.5, 27]; prefetch L0: copy-in [27,
  // 29] beside L1's backward, G(L0) queued behind RS(head): [29.5, 32.5]. L1 bwd [27, 37.25] (2 ms
  // at half rate). RS copy-in(L1) [37.25, 37.75], RS(L1) [37.75, 40.75]. Copy-out(L0) [37.75,
  // 38.25] (no prefetch: the embedding is not gathered for backward); L0 bwd [38.25, 47.5];
  // copy-in [47.5, 48], RS(L0) [48, 51]; emb bwd [48, 48.5]; its copy-in waits for RS(L0): [51,
  // 51.5], RS(emb) [51.5, 54.5]. Gradient norms [54.5, 55], their all-reduce [55, 58], clip [58,
  // 58.5], update [58.5, 59].
  BuiltStep step;
  const ReplayResult r = run(tiny("fsdp", 250, 32), step, with_kernels());
  CHECK(step.microbatches == 1);
  CHECK(r.makespan == Approx(0.059));
  const TimelineMetrics m = measure(step.graph, r);
  // Compute first, then the earliest-started communication, then idle. forward 1 + 7.25 + 5.25
  // + 2 = 15.5; backward 3 + 10.25 + 9.25 + 0.5 = 23. fsdp_gather 8.5: copy-in and G(emb) alone
  // over [0, 4], G(L0) over [5.5, 7], and the copy-outs 4 x 0.5 + 3 x 0.5. fsdp_reduce 7.5: the
  // copy-ins 4 x 0.5, RS(L0) over [48.5, 51] and RS(emb) 3. optimizer 4.5.
  CHECK(phase(m, PhaseTag::forward) == Approx(0.0155));
  CHECK(phase(m, PhaseTag::backward) == Approx(0.023));
  CHECK(phase(m, PhaseTag::fsdp_gather) == Approx(0.0085));
  CHECK(phase(m, PhaseTag::fsdp_reduce) == Approx(0.0075));
  CHECK(phase(m, PhaseTag::optimizer) == Approx(0.0045));
  CHECK(m.ranks[0].idle == Approx(0).margin(1e-12));
}
