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
  nlohmann::json doc = {{"architecture",
                         {{"num_layers", 2},
                          {"d_model", 64},
                          {"vocab_size", 128},
                          {"sequence_length", 16},
                          {"attention", {{"num_heads", 4}, {"num_kv_heads", 4}, {"head_dim", 16}}},
                          {"dense_hidden", 128}}},
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
  // 18 ms. m = 2: backward of microbatch 1 ends at 54. Then the single bucket's all-reduce
  // [54, 57], the grad-norm all-reduce [57, 60], the sharded update (free) and the weight
  // rebuild all-gather [60, 63].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(250), step);
  CHECK(step.ranks.size() == 1);
  CHECK(step.microbatches == 2);
  CHECK(r.makespan == Approx(0.063));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::forward)] == Approx(0.018));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::backward)] == Approx(0.036));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.003));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::optimizer)] == Approx(0.003));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::weight_rebuild)] == Approx(0.003));
}

TEST_CASE("DDP golden: per-tensor buckets overlap the last backward, then queue on the stream", "[golden]") {
  // Every tensor its own bucket (19 of them). Head buckets (2) start when the head backward
  // ends at 38: [38, 44]. Layer 1's 8 buckets are ready at 46: [46, 70]. Layer 0's 8 and the
  // embedding's are ready at 54 but the stream is busy: [70, 97]. Grad norm [97, 100],
  // all-gather [100, 103].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(1e-9), step);
  CHECK(r.makespan == Approx(0.103));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.043));
  CHECK(m.ranks[0].busy[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.057));
}

TEST_CASE("DDP golden with kernels: FP32 accumulation every microbatch, sharded update and rebuild", "[golden]") {
  // Memory kernels 0.5 ms, attention 0.25 ms. A block's forward: 4 GEMMs + attention + 2
  // elementwise = 5.25; its backward 8 GEMMs + attention + 2 elementwise = 9.25. Embedding 0.5
  // each way; head forward 1 GEMM + 2 elementwise = 2.0, backward 2 GEMMs + 2 elementwise = 3.0.
  // Forward per microbatch 0.5 + 2 x 5.25 + 2.0 = 13.0. Backward: head 3.0, blocks 9.25 each,
  // embedding 0.5, and after each of the 4 units its FP32 accumulation (0.5) on the compute
  // stream: 3.0 + 18.5 + 0.5 + 2.0 = 24.0. m = 2: the compute ends at 74.0. The one bucket
  // (ready with the embedding) all-reduces [74, 77], grad norm [77, 80], sharded update [80,
  // 80.5], rebuild: pack [80.5, 81], all-gather [81, 84], copy out [84, 84.5].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(250), step, with_kernels());
  CHECK(r.makespan == Approx(0.0845));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(phase(m, PhaseTag::forward) == Approx(0.026));
  CHECK(phase(m, PhaseTag::backward) == Approx(0.044));
  CHECK(phase(m, PhaseTag::accumulate) == Approx(0.004));  // 4 units x 2 microbatches x 0.5
  CHECK(phase(m, PhaseTag::grad_sync) == Approx(0.003));
  CHECK(phase(m, PhaseTag::optimizer) == Approx(0.0035));   // grad norm + update
  CHECK(phase(m, PhaseTag::weight_rebuild) == Approx(0.004));
  CHECK(m.ranks[0].idle == Approx(0).margin(1e-12));
  // By kind: GEMM/attention blocks 2 x (12.5 + 21.5) = 68; memory-bound: embedding 2 x 1.0,
  // accumulation 2 x 2.0, update, pack and copy out 1.5 = 7.5; collectives 3 x 3 = 9.
  CHECK(kind(m, TaskKind::compute) == Approx(0.068));
  CHECK(kind(m, TaskKind::memory) == Approx(0.0075));
  CHECK(kind(m, TaskKind::collective) == Approx(0.009));
}

TEST_CASE("FSDP golden: gathers prefetched one unit ahead, copy-out and copy-in sharing the SMs", "[golden]") {
  // m = 1, prefetch 1, units: embedding, 2 blocks, head (times as in the DDP golden above).
  // Forward: gathers serialize on their stream, the gather of unit i waits for unit i - 2's
  // compute; each unit's copy-out (0.5) follows its gather and the previous compute:
  //   G(emb) [0, 3], copy [3, 3.5], emb [3.5, 4];  G(L0) [3, 6], copy [6, 6.5], L0 [6.5, 11.75];
  //   G(L1) [6, 9], copy [11.75, 12.25], L1 [12.25, 17.5];  G(head) [11.75, 14.75], copy
  //   [17.5, 18], head [18, 20].
  // Backward (head, L1, L0, emb): G(head) [14.75, 17.75], copy [20, 20.5], head bwd [20.5, 23.5];
  // then each unit's copy-in (0.5, reduce-scatter stream) runs beside the next unit's copy-out,
  // both at half rate: [23.5, 24.5]. G(L1) [17.75, 20.75]; L1 bwd [24.5, 33.75]. The head's
  // reduce-scatter [24.5, ...] shares the link with G(L0) (started 23.5 when the head's compute
  // ended, 1 ms done by 24.5): G(L0) ends 28.5, RS(head) 29.5. Copy-in(L1) and copy-out(L0)
  // [33.75, 34.75]; G(emb) [33.75, 38.75] beside RS(L1) [34.75, 39.75]; L0 bwd [34.75, 44];
  // copy-in(L0) and copy-out(emb) [44, 45]; emb bwd [45, 45.5]; RS(L0) [45, 48]; copy-in(emb) waits
  // for its stream: [48, 48.5]; RS(emb) [48.5, 51.5]. Grad norm [51.5, 54.5], update [54.5, 55].
  BuiltStep step;
  const ReplayResult r = run(tiny("fsdp", 250, 32), step, with_kernels());
  CHECK(step.microbatches == 1);
  CHECK(r.makespan == Approx(0.055));
  const TimelineMetrics m = measure(step.graph, r);
  // Compute first, then the earliest-started communication, then idle. forward 0.5 + 10.5 + 2
  // = 13; backward 3 + 18.5 + 0.5 = 22. fsdp_gather 10.5: the gathers alone over [0, 3] and
  // [4, 6], the 4 forward copy-outs (2.0), and the backward ones (0.5 + 3 x 1.0 at half rate).
  // fsdp_reduce 6.0: RS(L0) after the embedding's backward [45.5, 48], copy-in(emb) 0.5, RS(emb)
  // 3.0. optimizer 3.5.
  CHECK(phase(m, PhaseTag::forward) == Approx(0.013));
  CHECK(phase(m, PhaseTag::backward) == Approx(0.022));
  CHECK(phase(m, PhaseTag::fsdp_gather) == Approx(0.0105));
  CHECK(phase(m, PhaseTag::fsdp_reduce) == Approx(0.006));
  CHECK(phase(m, PhaseTag::optimizer) == Approx(0.0035));
  CHECK(m.ranks[0].idle == Approx(0).margin(1e-12));
}
