// Compute/communication interference: a GEMM on every GPU's main stream alone, then while an
// all-reduce (and then an all-to-all) runs back to back on each GPU's side stream. Only GEMM
// iterations that start and end inside the background window (on the first GPU) count.
// slowdown = overlapped median / alone median (cf. the report's Table 9 for grouped GEMM). The
// communication side (collectives beside compute) is interference_comm.cpp.
#include <algorithm>
#include <cmath>
#include <memory>

#include "errors.hpp"
#include "gemm.hpp"
#include "groups.hpp"
#include "overlap_window.hpp"
#include "report_table.hpp"

namespace moesim::cal {
namespace {

// The GEMM slows by about a quarter beside communication kernels (report Table 9): a window 1.5x
// the GEMM's alone time covers every timed iteration.
constexpr double kGemmWindowHeadroom = 1.5;
// At most this many background collectives per window (the enqueue stays short).
constexpr int kMaxBackgroundReps = 400;

}  // namespace

void run_interference(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    const auto& cfg = g.shapes.interference;
    const GemmDims d{cfg.gemm.m, cfg.gemm.n, cfg.gemm.k, cfg.gemm.layout};
    const std::int64_t ar_bytes = cfg.allreduce_bytes / 4 * 4, drow = g.shapes.alltoall.d;
    const std::int64_t a2a_rows = std::max<std::int64_t>(n, cfg.alltoall_rows_per_rank / n * n);
    if (ctx.root())
        print_gemm_header("interference: GEMM alone vs with a collective on another stream (group size " +
                          std::to_string(n) + ")");
    if (!g.timer.affordable(0)) return skip_point(g, "interference", stop_requested() ? "interrupted" : "time budget");
    const std::int64_t need = GemmOperands::bytes_for(d) + 2 * ar_bytes + 4 * a2a_rows * drow;
    if (need > buffer_cap(g, 1)) return skip_point(g, "interference", "buffers exceed the free-memory cap");
    MeasurementScope scope("interference setup");
    std::vector<std::unique_ptr<LtGemm>> lts;
    std::vector<std::shared_ptr<LtGemm::Plan>> plans;
    std::vector<GemmOperands> ops;
    std::vector<DeviceBuffer> ar_send, ar_recv, a2a_send, a2a_recv;
    for (auto& s : ctx.slots) {
        lts.push_back(std::make_unique<LtGemm>(s.device));
        plans.push_back(lts.back()->plan(d));
        if (!plans.back()) return skip_point(g, "interference", "cuBLASLt heuristic returned no algorithm");
        ops.push_back(make_operands(s, d, g.opts.seed, GemmOperands::bytes_for(d)));
        ar_send.emplace_back(s.device, static_cast<std::uint64_t>(ar_bytes));
        ar_recv.emplace_back(s.device, static_cast<std::uint64_t>(ar_bytes));
        a2a_send.emplace_back(s.device, static_cast<std::uint64_t>(a2a_rows * drow * 2));
        a2a_recv.emplace_back(s.device, static_cast<std::uint64_t>(a2a_rows * drow * 2));
        const auto seed = stream_seed(g.opts.seed, kRoleInterfere, static_cast<std::uint64_t>(s.rank));
        fill_f32(ar_send.back().as<float>(), static_cast<std::uint64_t>(ar_bytes / 4), seed, 0, s.stream);
        fill_bf16(a2a_send.back().as<bf16_bits>(), static_cast<std::uint64_t>(a2a_rows * drow), seed, 0, s.stream);
    }
    ctx.sync();
    auto idx = [&](const Slot& s) { return static_cast<std::size_t>(&s - ctx.slots.data()); };
    auto gemm = [&] {
        for (auto& s : ctx.slots) {
            const std::size_t i = idx(s);
            // LtGemm::run selects the slot's device before launching.
            lts[i]->run(*plans[i], ops[i].x.as<bf16_bits>(), ops[i].w.as<bf16_bits>(), ops[i].c.as<bf16_bits>(),
                        s.stream);
        }
    };
    auto all_reduce = [&](bool side) {
        nccl_group(ctx, [&](Slot& s) {
            CAL_NCCL(ncclAllReduce(ar_send[idx(s)].get(), ar_recv[idx(s)].get(), static_cast<std::size_t>(ar_bytes / 4),
                                   ncclFloat, ncclSum, s.comm, side ? s.side : s.stream));
        });
    };
    const std::int64_t per_peer = a2a_rows / n * drow;
    auto all_to_all = [&](bool side) {
        nccl_group(ctx, [&](Slot& s) {
            const auto* sb = a2a_send[idx(s)].as<bf16_bits>();
            auto* rb = a2a_recv[idx(s)].as<bf16_bits>();
            for (int q = 0; q < n; ++q) {
                CAL_NCCL(ncclSend(sb + q * per_peer, static_cast<std::size_t>(per_peer), ncclBfloat16, q, s.comm,
                                  side ? s.side : s.stream));
                CAL_NCCL(ncclRecv(rb + q * per_peer, static_cast<std::size_t>(per_peer), ncclBfloat16, q, s.comm,
                                  side ? s.side : s.stream));
            }
        });
    };
    MeasurementScope alone_scope("interference: gemm alone");
    const TimedRun alone = g.timer.run(all_slots(ctx), true, gemm);
    struct Bg {
        std::string name;
        std::int64_t bytes;
        std::function<void(bool)> run;
    };
    const std::vector<Bg> backgrounds = {{"all_reduce", ar_bytes, all_reduce},
                                         {"all_to_all", a2a_rows * drow * 2, all_to_all}};
    for (const auto& bg : backgrounds) {
        const std::string what = "interference gemm+" + bg.name;
        if (!g.timer.affordable(alone.stats.median * 1e-6 * 3)) {
            skip_point(g, what, stop_requested() ? "interrupted" : "time budget");
            continue;
        }
        MeasurementScope bg_scope(what);
        const TimedRun bg_alone = g.timer.run(all_slots(ctx), true, [&] { bg.run(false); });
        OverlapPlan plan;
        plan.background_stream = StreamRole::Side;
        plan.background = [&] { bg.run(true); };
        plan.foreground = gemm;
        plan.lead_in = 2;  // lets the background get going
        plan.iters = alone.iters;
        plan.background_reps = background_reps_for(alone.stats.median, plan.iters + plan.lead_in, kGemmWindowHeadroom,
                                                   bg_alone.stats.median, kMaxBackgroundReps);
        const OverlapRun run = run_overlapped(ctx, plan);
        const TimedRun& with = run.inside;
        const int reps = plan.background_reps;
        Slot& s0 = ctx.first();
        const double err = sampled_gemm_error(ops.front(), s0.stream, 16);
        const double bg_overlapped_us = run.background_mean_us;
        json::Value rec = base_record("interference", g.group, "gemm+" + bg.name, "bf16", n);
        rec.set("m", d.m);
        rec.set("n", d.n);
        rec.set("k", d.k);
        rec.set("layout", layout_name(d.layout));
        rec.set("background", bg.name);
        rec.set("background_bytes", bg.bytes);
        rec.set("background_reps", reps);
        add_timing(rec, with);
        rec.set("overlapped_iters", with.iters);
        add_alone_and_slowdown(rec, alone, with);
        rec.set("tflops_alone", alone.stats.median > 0 ? d.flops() / (alone.stats.median * 1e6) : 0.0);
        rec.set("tflops", with.stats.median > 0 ? d.flops() / (with.stats.median * 1e6) : 0.0);
        rec.set("background_alone_median_us", bg_alone.stats.median);
        rec.set("background_overlapped_mean_us", bg_overlapped_us);
        rec.set("background_slowdown", bg_alone.stats.median > 0 ? bg_overlapped_us / bg_alone.stats.median : 0.0);
        rec.set("check", err <= kGemmTolerance ? "ok" : "failed");
        rec.set("check_rel_error", std::isfinite(err) ? json::Value(err) : json::Value());
        if (ctx.root()) {
            print_gemm_row("alone", d.m, d.n, d.k, layout_name(d.layout), alone, d.flops() / (alone.stats.median * 1e6),
                           "-");
            print_gemm_row("with " + bg.name + " (x" + std::to_string(with.iters) + " inside)", d.m, d.n, d.k,
                           layout_name(d.layout), with,
                           with.stats.median > 0 ? d.flops() / (with.stats.median * 1e6) : 0.0,
                           err <= kGemmTolerance ? "ok" : "failed");
        }
        emit(g, std::move(rec));
    }
}

}  // namespace moesim::cal
