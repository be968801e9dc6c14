// The EP all-to-all overlap (Megatron-Core overlap_moe_expert_parallel_comm, combined 1F1B) on a
// tiny MoE model: two MoE blocks, two experts over EP 2, round-number costs (test FakeCosts).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "sim/engine.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_simulation.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_step.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

nlohmann::json tiny_moe(std::int64_t layers) {
  nlohmann::json a = test::tiny_dense_architecture();
  a["num_layers"] = layers;
  a["moe"] = {{"num_experts", 2}, {"top_k", 1}, {"expert_hidden", 64}};
  return a;
}

Scenario scenario(bool overlap, const nlohmann::json& extra = nlohmann::json::object(), std::int64_t gpus = 2,
                  std::int64_t layers = 2) {
  test::TempDir dir;
  nlohmann::json plan = {{"design", "ddp"},
                         {"nodes", 1},
                         {"gpus_per_node", gpus},
                         {"expert_parallel", {{"degree", 2}, {"a2a_overlap", overlap}}},
                         {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 16 * gpus * 3}}}};
  if (extra.is_object()) plan.merge_patch(extra);
  const nlohmann::json doc = {{"architecture", tiny_moe(layers)},
                              {"plan", plan},
                              {"hardware", read_json_file(test::source_path("hardware_profiles/b300-hgx.json"))}};
  return load_scenario(dir.write("tiny-moe.json", doc.dump()), {});
}

using Run = test::FakeStep;

Run run(const Scenario& s, const test::FakeCosts& costs) { return test::run_fake_step(s, costs); }

// Rank 0's tasks on `stream` from `from` on, as "label mb layer".
std::vector<std::string> stream_order(const BuiltStep& step, StreamKind stream, TaskId from, std::size_t count) {
  std::vector<std::string> out;
  for (TaskId id = from; id < step.graph.size() && out.size() < count; ++id) {
    const Task& t = step.graph.task(id);
    if (t.rank != 0 || t.stream != stream) continue;
    std::string line = t.label;
    line += ' ';
    line += std::to_string(t.microbatch);
    line += ' ';
    line += std::to_string(t.layer);
    out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("EP all-to-all overlap: one more forward in the warm-up, then each forward fused with a backward", "[unit]") {
  // No pipeline: forward 0, then forward i + 1 with backward i, then the last backward
  // (combined_1f1b_schedule_for_no_pipelining).
  const Scenario s = scenario(true);
  const std::vector<PipeOp> ops = stage_schedule(s.plan, 0, 3);
  std::vector<std::pair<std::string, bool>> seen;
  for (const PipeOp& op : ops) {
    std::string name = op.forward ? "F" : "B";
    name += std::to_string(op.microbatch);
    seen.emplace_back(name, op.fused_with_next);
  }
  CHECK(seen == std::vector<std::pair<std::string, bool>>{
                    {"F0", false}, {"F1", true}, {"B0", false}, {"F2", true}, {"B1", false}, {"B2", false}});
  // Two microbatches' activations are held at once instead of one.
  CHECK(peak_chunks_in_flight(ops) == 2);
  CHECK(peak_chunks_in_flight(stage_schedule(scenario(false).plan, 0, 3)) == 1);
  // Interleaved 1F1B on 2 stages with 2 chunks and 4 microbatches: stage 0 warms up with
  // 2(P - 1) + (v - 1)P + 1 = 5 forwards, then fuses each forward with the next backward.
  const Scenario pp =
      scenario(true, {{"pipeline", {{"degree", 2}, {"schedule", "interleaved_1f1b"}, {"virtual_stages", 2}}}}, 4, 4);
  const std::vector<PipeOp> stage0 = stage_schedule(pp.plan, 0, 4);
  std::size_t warmup = 0;
  while (warmup < stage0.size() && stage0[warmup].forward && !stage0[warmup].fused_with_next) ++warmup;
  CHECK(warmup == 5);
  CHECK(stage0[5].fused_with_next);
  CHECK_FALSE(stage0[6].forward);
}

TEST_CASE("EP all-to-all overlap golden: a fused pair interleaves two blocks as schedule_layer_1f1b does", "[golden]") {
  test::FakeCosts costs;
  costs.collective_s = 1e-3;
  const Run r = run(scenario(true), costs);
  // The first fused pair (forward 1 with backward 0) starts after forward 0's 4 blocks of tasks;
  // find backward 0's head, then read both streams from there.
  TaskId from = 0;
  while (!(r.step.graph.task(from).microbatch == 0 && r.step.graph.task(from).phase == PhaseTag::backward)) ++from;
  // The forward's embedding runs before the backward's head; block 0 of the forward pairs with
  // block 1 of the backward, block 1 with block 0.
  const std::vector<std::string> compute = stream_order(r.step, StreamKind::compute, from, 7);
  // Compute stream ("label microbatch layer"): the backward's head (and its gradients added into
  // the FP32 buckets), then block 1 of backward 0 with block 0 of forward 1: the combine's
  // backward, the forward's attention, the backward's experts, the forward's experts, the
  // backward's attention, and the forward's combine.
  CHECK(compute == std::vector<std::string>{"LM head + loss backward 0 2", "FP32 grad accumulate 0 2",
                                            "combine backward 0 1", "attention + router 1 0",
                                            "routed experts backward 0 1", "routed experts 1 0",
                                            "attention + router backward 0 1"});
  // EP stream: the combine's gradient (backward 0, block 1), the forward's dispatch (forward 1,
  // block 0), the dispatch's gradient, the forward's combine.
  CHECK(stream_order(r.step, StreamKind::comm_ep, from, 4) ==
        std::vector<std::string>{"ep_combine all_to_all 0 1", "ep_dispatch all_to_all 1 0",
                                 "ep_dispatch all_to_all 0 1", "ep_combine all_to_all 1 0"});
}

TEST_CASE("EP all-to-all overlap: free transfers leave the step unchanged, priced ones are partly hidden", "[golden]") {
  // With every collective free, the compute stream runs the same kernels either way, one after
  // another: the fused order changes nothing.
  test::FakeCosts free;
  free.collective_s = 0;
  CHECK(run(scenario(true), free).replay.makespan == Approx(run(scenario(false), free).replay.makespan));
  // Priced, the fused pairs' transfers run beside the other microbatch's compute.
  test::FakeCosts priced;
  priced.collective_s = 1e-3;
  const Run plain = run(scenario(false), priced);
  const Run fused = run(scenario(true), priced);
  const double plain_ep = plain.exposed(PhaseTag::ep_dispatch) + plain.exposed(PhaseTag::ep_combine);
  const double fused_ep = fused.exposed(PhaseTag::ep_dispatch) + fused.exposed(PhaseTag::ep_combine);
  CHECK(fused_ep < plain_ep);
  CHECK(fused.replay.makespan < plain.replay.makespan);
  CHECK(plain.replay.makespan - fused.replay.makespan == Approx(plain_ep - fused_ep).margin(1e-9));
}

TEST_CASE("EP all-to-all overlap: Megatron-Core's rules", "[unit]") {
  const auto refusal = [](const nlohmann::json& extra, std::int64_t gpus = 2) {
    try {
      scenario(true, extra, gpus);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refusal({{"pipeline", {{"degree", 2}, {"schedule", "1f1b"}}}}, 4),
             Catch::Contains("plan.expert_parallel.a2a_overlap") && Catch::Contains("interleaved_1f1b"));
  CHECK_THAT(refusal({{"activations", {{"recompute", "full"}}}}), Catch::Contains("full recomputation"));
  CHECK_THAT(refusal({{"design", "fsdp"}}), Catch::Contains("DDP and ZeRO-2"));
  CHECK(refusal({}).empty());
  CHECK(refusal({{"design", "zero2"}}).empty());
}

namespace {
// Rank 0's first task labelled `label` of microbatch `mb`, layer `layer`, from `from` on.
TaskId find_task(const BuiltStep& step, TaskId from, const std::string& label, std::int32_t mb, std::int64_t layer) {
  for (TaskId id = from; id < step.graph.size(); ++id) {
    const Task& t = step.graph.task(id);
    if (t.rank == 0 && t.label == label && t.microbatch == mb && t.layer == layer) return id;
  }
  FAIL("no task " << label);
  return kNoTask;
}
}  // namespace

TEST_CASE("delay_wgrad golden: the dispatch's gradient leaves after the experts' dgrads, their wgrads run beside it",
          "[golden]") {
  test::FakeCosts costs;
  costs.collective_s = 1e-3;
  const Run plain = run(scenario(true), costs);
  const Run delayed = run(scenario(true, {{"expert_parallel", {{"delay_wgrad", true}}}}), costs);
  TaskId from = 0;
  while (!(delayed.step.graph.task(from).microbatch == 0 && delayed.step.graph.task(from).phase == PhaseTag::backward))
    ++from;
  // Megatron-Core model_chunk_schedule_plan.py: mlp_bwd -> mlp_bwd_dw -> mlp_fwd on the compute
  // stream; the attention's weight gradients after its input gradients.
  CHECK(stream_order(delayed.step, StreamKind::compute, from, 9) ==
        std::vector<std::string>{"LM head + loss backward 0 2", "FP32 grad accumulate 0 2", "combine backward 0 1",
                                 "attention + router 1 0", "routed experts backward 0 1", "expert weight gradients 0 1",
                                 "routed experts 1 0", "attention + router backward 0 1", "weight gradients 0 1"});
  // The experts' backward was 2 grouped GEMMs' dgrads and wgrads (8 ms); delayed, its dgrads
  // (4 ms) and, apart, its wgrads (4 ms).
  const auto length = [](const Run& r, TaskId t) { return r.replay.finish[t] - r.replay.start[t]; };
  const TaskId whole = find_task(plain.step, 0, "routed experts backward", 0, 1);
  const TaskId dgrads = find_task(delayed.step, 0, "routed experts backward", 0, 1);
  const TaskId wgrads = find_task(delayed.step, 0, "expert weight gradients", 0, 1);
  CHECK(length(plain, whole) == Approx(8e-3));
  CHECK(length(delayed, dgrads) == Approx(4e-3));
  CHECK(length(delayed, wgrads) == Approx(4e-3));
  // The dispatch's gradient (backward 0, block 1) waits for the dgrads only, and runs while the
  // wgrads do.
  const TaskId grad = find_task(delayed.step, dgrads, "ep_dispatch all_to_all", 0, 1);
  CHECK(delayed.replay.start[grad] == Approx(delayed.replay.finish[dgrads]));
  CHECK(delayed.replay.start[grad] < delayed.replay.finish[wgrads]);
  // At 1 ms the dispatch's gradient was hidden behind the forward's experts (4 ms) either way:
  // the same compute, the same step. At 6 ms it outlasted them by 2 ms; leaving 4 ms earlier, it
  // ends under the experts' wgrads and the forward's experts, and the step is shorter.
  CHECK(delayed.replay.makespan == Approx(plain.replay.makespan));
  costs.collective_s = 6e-3;
  const double plain_6 = run(scenario(true), costs).replay.makespan;
  const double delayed_6 = run(scenario(true, {{"expert_parallel", {{"delay_wgrad", true}}}}), costs).replay.makespan;
  CHECK(delayed_6 < plain_6);
}

TEST_CASE("delay_wgrad needs the EP all-to-all overlap, as Megatron-Core asserts", "[unit]") {
  try {
    scenario(false, {{"expert_parallel", {{"delay_wgrad", true}}}});
    FAIL("accepted");
  } catch (const std::exception& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("plan.expert_parallel.delay_wgrad") && Catch::Contains("a2a_overlap"));
  }
}
