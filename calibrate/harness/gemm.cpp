// Dense BF16 GEMM group: the shapes file's GEMMs, then a generic grid (M = 128..65536 in powers
// of two, N and K in {2048, 4096, 8192}), smallest work first within the grid, trimmed to the
// group's time share. Runs on the first GPU; reports TFLOP/s.
#include <algorithm>
#include <cmath>

#include "errors.hpp"
#include "gemm.hpp"
#include "groups.hpp"
#include "report_table.hpp"

namespace moesim::cal {

namespace {

// Measures one GEMM; false when the budget could not afford it.
bool measure_gemm(GroupEnv& g, LtGemm& lt, const std::string& label, const std::string& name, const GemmDims& d,
                  std::int64_t count, double peak_tflops_guess) {
    const std::string what = "gemm " + name + " " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" +
                             std::to_string(d.k) + " " + layout_name(d.layout);
    // Estimate from a rate of 600 TFLOP/s plus launch overhead; only to decide whether to try.
    const double est = d.flops() / (peak_tflops_guess * 1e12) + 10e-6;
    if (!g.timer.affordable(est)) {
        skip_point(g, what, stop_requested() ? "interrupted" : "time budget");
        return false;
    }
    MeasurementScope scope(what);
    Slot& slot = g.ctx.first();
    const std::int64_t cap = buffer_cap(g, 1);
    if (GemmOperands::bytes_for(d) > cap) {
        skip_point(g, what, "operands exceed the free-memory cap");
        return true;
    }
    auto plan = lt.plan(d);
    if (!plan) {
        skip_point(g, what, "cuBLASLt heuristic returned no algorithm");
        return true;
    }
    GemmOperands op = make_operands(slot, d, g.opts.seed, cap);
    // Correctness: one product into a poisoned C, sampled against a double-precision reference.
    poison(op.c.get(), op.c.bytes(), slot.stream);
    lt.run(*plan, op.x.as<bf16_bits>(), op.w.as<bf16_bits>(), op.c.as<bf16_bits>(), slot.stream);
    const double err = sampled_gemm_error(op, slot.stream, 32);
    int it = 0;
    const TimedRun r = g.timer.run({&slot}, false, [&] {
        const auto j = static_cast<std::int64_t>(it++ % op.sets);
        lt.run(*plan, op.x.as<bf16_bits>() + j * op.x_elems(), op.w.as<bf16_bits>() + j * op.w_elems(),
               op.c.as<bf16_bits>() + j * op.c_elems(), slot.stream);
    });
    const double tflops = r.stats.median > 0 ? d.flops() / (r.stats.median * 1e-6) / 1e12 : 0;
    json::Value rec = base_record("gemm", g.group, label, "bf16", 1);
    rec.set("name", name);
    rec.set("m", d.m);
    rec.set("n", d.n);
    rec.set("k", d.k);
    rec.set("layout", layout_name(d.layout));
    rec.set("count", count);
    rec.set("accumulate", "fp32");
    rec.set("library", "cublasLt");
    rec.set("algo", "heuristic_top1");
    rec.set("workspace_bytes", static_cast<std::int64_t>(LtGemm::kWorkspaceBytes));
    rec.set("operand_sets", op.sets);
    rec.set("flops", d.flops());
    add_timing(rec, r);
    rec.set("tflops", tflops);
    rec.set("check", err <= kGemmTolerance ? "ok" : "failed");
    rec.set("check_rel_error", std::isfinite(err) ? json::Value(err) : json::Value());
    if (g.ctx.root())
        print_gemm_row(name, d.m, d.n, d.k, layout_name(d.layout), r, tflops, err <= kGemmTolerance ? "ok" : "failed");
    emit(g, std::move(rec));
    return true;
}

}  // namespace

void run_gemm(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    LtGemm lt(slot.device);
    if (g.ctx.root())
        print_gemm_header("BF16 GEMM (cuBLASLt, FP32 accumulate) on device " + std::to_string(slot.device));
    std::vector<GemmShape> shapes = g.shapes.gemm;
    if (g.opts.quick && shapes.size() > 6) shapes.resize(6);
    for (const auto& s : shapes)
        if (!measure_gemm(g, lt, "shape", s.name, {s.m, s.n, s.k, s.layout}, s.count, 600)) break;
    std::vector<GemmDims> grid;
    const std::vector<std::int64_t> nk =
        g.opts.quick ? std::vector<std::int64_t>{4096} : std::vector<std::int64_t>{2048, 4096, 8192};
    const auto ms = g.opts.quick ? std::vector<std::int64_t>{128, 1024, 8192} : geometric(128, 65536, 2);
    for (std::int64_t m : ms)
        for (std::int64_t n : nk)
            for (std::int64_t k : nk) grid.push_back({m, n, k, Layout::Fwd});
    std::stable_sort(grid.begin(), grid.end(),
                     [](const GemmDims& a, const GemmDims& b) { return a.flops() < b.flops(); });
    for (std::size_t i = 0; i < grid.size(); ++i) {
        const auto& d = grid[i];
        const std::string name = "grid_" + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k);
        if (!measure_gemm(g, lt, "grid", name, d, 1, 600)) {
            if (i + 1 < grid.size())
                skip_point(g, "gemm grid: " + std::to_string(grid.size() - i - 1) + " larger shapes", "time budget");
            break;
        }
    }
    g.ctx.barrier();
}

}  // namespace moesim::cal
