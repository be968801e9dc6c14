// Kernel-sequence group: the kernels of ONE microbatch through one block (sequence_plan.hpp),
// forward then backward, launched in order on the first GPU's main stream and timed as a whole
// with CUDA events; then every kernel alone on the same buffers, so that the sequence time can be
// set beside the sum of its kernels and beside the simulator's compute tasks of that block.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "errors.hpp"
#include "grouped_ops.hpp"
#include "groups.hpp"
#include "memory_kernels.hpp"
#include "report_table.hpp"
#include "sequence_plan.hpp"

namespace moesim::cal {
namespace {

// Handles shared by the kernels, all on the slot's main stream.
struct Tools {
    Slot& slot;
    LtGemm& lt;
    cublasHandle_t blas;
    bool batched_ok;  // cublasGemmGroupedBatchedEx accepted (else one cuBLASLt call per expert)
};

// One kernel of the sequence bound to its own buffers.
struct Bound {
    const SeqKernel* k = nullptr;
    std::unique_ptr<GemmOperands> gemm;
    std::shared_ptr<LtGemm::Plan> plan;
    std::unique_ptr<GroupedOperands> grouped;
    std::unique_ptr<GroupedBatched> batched;
    std::vector<std::shared_ptr<LtGemm::Plan>> expert_plans;
    DeviceBuffer a, b;  // copy: source, destination; accumulation: FP32 accumulator, BF16 gradient
    std::uint64_t seed_a = 0, seed_b = 0;
    std::string method;
    std::function<void()> launch;
};

// Allocates, fills and plans one kernel; returns why it cannot run ("" when it can).
std::string bind(Bound& b, const SeqKernel& k, const SeqPlan& p, Tools& t, std::uint64_t seed) {
    Slot& slot = t.slot;
    b.k = &k;
    const auto n = static_cast<std::uint64_t>(k.elements);
    switch (k.op) {
        case SeqOp::Gemm: {
            b.plan = t.lt.plan(k.dims);
            if (!b.plan) return "cuBLASLt heuristic returned no algorithm for " + k.name;
            b.gemm = std::make_unique<GemmOperands>(make_operands(slot, k.dims, seed, GemmOperands::bytes_for(k.dims)));
            b.launch = [&b, &t] {
                t.lt.run(*b.plan, b.gemm->x.as<bf16_bits>(), b.gemm->w.as<bf16_bits>(), b.gemm->c.as<bf16_bits>(),
                         t.slot.stream);
            };
            return "";
        }
        case SeqOp::Grouped: {
            b.grouped = std::make_unique<GroupedOperands>(make_grouped(slot, k.grouped, p.rows, seed));
            if (t.batched_ok) {
                b.batched = std::make_unique<GroupedBatched>(slot, t.blas, *b.grouped);
                const cublasStatus_t probe = b.batched->call();
                if (probe == CUBLAS_STATUS_NOT_SUPPORTED || probe == CUBLAS_STATUS_INVALID_VALUE)
                    t.batched_ok = false;
                else
                    CAL_CUBLAS(probe);
            }
            if (t.batched_ok) {
                b.method = "cublasGemmGroupedBatchedEx";
                b.launch = [&b] { CAL_CUBLAS(b.batched->call()); };
                return "";
            }
            b.method = "cublasLt_per_expert_1stream";
            for (const auto& e : b.grouped->experts) {
                b.expert_plans.push_back(t.lt.plan(e.dims));
                if (!b.expert_plans.back()) return "cuBLASLt heuristic returned no algorithm for " + k.name;
            }
            b.launch = [&b, &t] {
                const GroupedOperands& g = *b.grouped;
                for (std::size_t e = 0; e < g.experts.size(); ++e)
                    t.lt.run(*b.expert_plans[e], g.x.as<bf16_bits>() + g.experts[e].off_x,
                             g.w.as<bf16_bits>() + g.experts[e].off_w, g.c.as<bf16_bits>() + g.experts[e].off_c,
                             t.slot.stream);
            };
            return "";
        }
        case SeqOp::Copy:
            b.a = DeviceBuffer(slot.device, 2 * n);
            b.b = DeviceBuffer(slot.device, 2 * n);
            b.seed_a = stream_seed(seed, kRoleMemSrc, 0);
            fill_bf16(b.a.as<bf16_bits>(), n, b.seed_a, 0, slot.stream);
            b.launch = [&b, &t, n] {
                CAL_CUDA(cudaMemcpyAsync(b.b.get(), b.a.get(), 2 * n, cudaMemcpyDeviceToDevice, t.slot.stream));
            };
            return "";
        case SeqOp::GradAccum:
            b.a = DeviceBuffer(slot.device, 4 * n);
            b.b = DeviceBuffer(slot.device, 2 * n);
            b.seed_a = stream_seed(seed, kRoleMemAcc, 0);
            b.seed_b = stream_seed(seed, kRoleMemGrad, 0);
            fill_bf16(b.b.as<bf16_bits>(), n, b.seed_b, 0, slot.stream);
            b.launch = [&b, &t, n] { grad_accum_bf16_to_f32(b.a.as<float>(), b.b.as<bf16_bits>(), n, t.slot.stream); };
            return "";
    }
    return "unknown kernel";
}

// One checked run of the whole sequence: poisoned outputs, fresh accumulators, then sampled
// GEMM errors (returned per kernel, -1 for memory kernels) and exact memory-kernel checks.
std::vector<double> checked_sequence(std::vector<Bound>& bound, Slot& slot, std::uint64_t& mismatches) {
    slot.counter->reset(slot.stream);
    for (auto& b : bound) {
        const auto n = static_cast<std::uint64_t>(b.k->elements);
        if (b.gemm) poison(b.gemm->c.get(), b.gemm->c.bytes(), slot.stream);
        if (b.grouped) poison(b.grouped->c.get(), b.grouped->c.bytes(), slot.stream);
        if (b.k->op == SeqOp::Copy) poison(b.b.get(), b.b.bytes(), slot.stream);
        if (b.k->op == SeqOp::GradAccum) fill_f32(b.a.as<float>(), n, b.seed_a, 0, slot.stream);
    }
    for (auto& b : bound) b.launch();
    std::vector<double> err(bound.size(), -1.0);
    for (std::size_t i = 0; i < bound.size(); ++i) {
        Bound& b = bound[i];
        const auto n = static_cast<std::uint64_t>(b.k->elements);
        if (b.gemm) err[i] = sampled_gemm_error(*b.gemm, slot.stream, 16);
        if (b.grouped) err[i] = grouped_error(*b.grouped, slot.stream);
        if (b.k->op == SeqOp::Copy) check_bf16(b.b.as<bf16_bits>(), n, b.seed_a, 0, slot.counter->ptr(), slot.stream);
        if (b.k->op == SeqOp::GradAccum)
            check_grad_accum(b.a.as<float>(), n, b.seed_a, b.seed_b, slot.counter->ptr(), slot.stream);
    }
    mismatches = slot.counter->read(slot.stream);
    return err;
}

// A time or ratio, null when missing (NaN: a kernel was not timed).
json::Value num(double v) { return std::isfinite(v) ? json::Value(v) : json::Value(); }

void measure_block(GroupEnv& g, Tools& t, const SeqPlan& p) {
    Slot& slot = t.slot;
    const std::string label = p.block + "_block", what = "sequence " + label;
    double est = 0, flops = 0, bytes = 0;
    for (const auto& k : p.kernels) {
        est += k.flops / 600e12 + k.bytes / 3e12 + 10e-6;
        flops += k.flops;
        bytes += k.bytes;
    }
    if (!g.timer.affordable(est)) return skip_point(g, what, stop_requested() ? "interrupted" : "time budget");
    const std::int64_t need = plan_bytes(p);
    if (need > buffer_cap(g, 1))
        return skip_point(g, what,
                          "buffers (" + human_bytes(static_cast<double>(need)) + ") exceed the free-memory cap");
    MeasurementScope scope(what);
    std::vector<Bound> bound(p.kernels.size());
    for (std::size_t i = 0; i < p.kernels.size(); ++i) {
        const std::string why = bind(bound[i], p.kernels[i], p, t, g.opts.seed + 101 * i);
        if (!why.empty()) return skip_point(g, what, why);
    }
    std::uint64_t mismatches = 0;
    const std::vector<double> err = checked_sequence(bound, slot, mismatches);
    const TimedRun whole = g.timer.run({&slot}, false, [&] {
        for (auto& b : bound) b.launch();
    });

    // Every kernel alone, back to back on its own buffers (the existing per-point timer).
    json::Value kernels = json::Value::array();
    const double missing = std::nan("");
    double sum = 0.0;  // NaN once any kernel was not timed alone
    json::Value phase_sums = json::Value::object();
    std::vector<std::pair<std::string, double>> phases;
    double max_err = 0;
    bool gemm_ok = true, out_of_time = false;
    std::string grouped_method;
    for (std::size_t i = 0; i < bound.size(); ++i) {
        const SeqKernel& k = p.kernels[i];
        json::Value o = kernel_json(k);
        if (!bound[i].method.empty()) {
            o.set("method", bound[i].method);
            grouped_method = grouped_method.empty() || grouped_method == bound[i].method ? bound[i].method : "mixed";
        }
        std::optional<TimedRun> r;
        if (!out_of_time && !g.timer.affordable(0)) {
            out_of_time = true;
            skip_point(g, what + ": kernels alone from " + k.name + " on",
                       stop_requested() ? "interrupted" : "time budget");
        }
        if (!out_of_time) r = g.timer.run({&slot}, false, bound[i].launch);
        const double med = r ? r->stats.median : missing;
        o.set("iters", r ? json::Value(r->iters) : json::Value());
        o.set("median_us", num(med));
        o.set("p10_us", r ? json::Value(r->stats.p10) : json::Value());
        o.set("p90_us", r ? json::Value(r->stats.p90) : json::Value());
        const double secs = r && med > 0 ? med * 1e-6 : 0;
        if (k.flops > 0) o.set("tflops", secs > 0 ? json::Value(k.flops / secs / 1e12) : json::Value());
        if (k.bytes > 0) o.set("GBps", secs > 0 ? json::Value(k.bytes / secs / 1e9) : json::Value());
        if (err[i] >= 0) {
            o.set("check_rel_error", std::isfinite(err[i]) ? json::Value(err[i]) : json::Value());
            max_err = std::max(max_err, err[i]);
            gemm_ok = gemm_ok && err[i] <= kGemmTolerance;
        }
        kernels.push_back(o);
        sum += med;
        auto ph = std::find_if(phases.begin(), phases.end(), [&](const auto& x) { return x.first == k.phase; });
        if (ph == phases.end()) ph = phases.insert(phases.end(), {k.phase, 0.0});
        ph->second += med;
        if (g.ctx.root() && r) {
            const bool grp = k.op == SeqOp::Grouped;
            const auto& s = k.grouped;
            const std::int64_t m = k.op == SeqOp::Gemm ? k.dims.m : grp ? (s.rows_dim == 'm' ? 0 : s.m) : k.elements;
            const std::int64_t n = k.op == SeqOp::Gemm ? k.dims.n : grp ? s.n : 0;
            const std::int64_t kk = k.op == SeqOp::Gemm ? k.dims.k : grp ? (s.rows_dim == 'k' ? 0 : s.k) : 0;
            const char* lay = k.op == SeqOp::Gemm ? layout_name(k.dims.layout) : grp ? layout_name(s.layout) : "mem";
            print_gemm_row("  " + k.name, m, n, kk, lay, *r, secs > 0 ? k.flops / secs / 1e12 : 0,
                           err[i] < 0                 ? "-"
                           : err[i] <= kGemmTolerance ? "ok"
                                                      : "failed");
        }
    }
    for (const auto& [name, v] : phases) phase_sums.set(name, num(v));
    const bool ok = gemm_ok && mismatches == 0;
    const double tflops = whole.stats.median > 0 ? flops / (whole.stats.median * 1e-6) / 1e12 : 0;

    json::Value rec = base_record("sequence", g.group, label, "bf16", 1);
    rec.set("block", p.block);
    rec.set("example_layer", p.example_layer);
    rec.set("layers_of_kind", p.layers_of_kind);
    rec.set("tokens", p.tokens);
    rec.set("model", model_dims_to_json(g.shapes.dims));
    rec.set("model_defaults_used", json::Value::array_of(g.shapes.dims.defaulted));
    rec.set("block_params", p.params);
    if (p.block == "moe") {
        rec.set("experts", g.shapes.dims.routed_experts);
        rec.set("top_k", g.shapes.dims.top_k);
        rec.set("zipf_s", p.zipf_s);
        rec.set("seed", p.seed);
        rec.set("rows_per_expert", json::Value::array_of(p.rows));
        rec.set("grouped_method", grouped_method);
    }
    rec.set("stream", "one stream: every kernel in order on the first GPU's main stream, no CUDA graph");
    rec.set("kernel_count", static_cast<std::int64_t>(p.kernels.size()));
    rec.set("kernels", kernels);
    rec.set("flops", flops);
    rec.set("memory_bytes", bytes);
    rec.set("buffer_bytes", need);
    add_timing(rec, whole);
    rec.set("tflops", tflops);
    rec.set("kernels_sum_median_us", num(sum));
    rec.set("phase_sum_median_us", phase_sums);
    rec.set("sequence_over_kernel_sum", sum > 0 ? num(whole.stats.median / sum) : json::Value());
    rec.set("includes", sequence_includes(p));
    rec.set("excludes", sequence_excludes(p));
    rec.set("check", ok ? "ok" : "failed");
    rec.set("check_rel_error", std::isfinite(max_err) ? json::Value(max_err) : json::Value());
    rec.set("check_mismatches", mismatches);
    if (g.ctx.root()) {
        print_gemm_row("SEQUENCE " + label + " (" + std::to_string(p.kernels.size()) + " kernels)", p.tokens, 0, 0,
                       "all", whole, tflops, ok ? "ok" : "failed");
        print_note(label + ": sequence median " + json::format_double(whole.stats.median) +
                   " us, sum of kernels alone " +
                   (std::isfinite(sum) ? json::format_double(sum) + " us" : std::string("n/a (not all timed)")) +
                   "; attention kernels not included");
    }
    emit(g, std::move(rec));
}

}  // namespace

void run_sequence(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    CAL_CUDA(cudaSetDevice(slot.device));
    if (g.ctx.root()) {
        print_gemm_header(
            "kernel sequence of one microbatch through one block, forward + backward, one stream, device " +
            std::to_string(slot.device));
        print_note("attention kernels not included (no flash-attention stand-in in cuBLAS); rows: each kernel alone");
    }
    LtGemm lt(slot.device);
    cublasHandle_t handle = nullptr;
    CAL_CUBLAS(cublasCreate(&handle));
    CAL_CUBLAS(cublasSetStream(handle, slot.stream));
    CAL_CUBLAS(cublasSetWorkspace(handle, lt.workspace(), LtGemm::kWorkspaceBytes));
    const bool batched = MOESIM_HAVE_GROUPED_BATCHED != 0 && g.opts.sequence_grouped == "batched";
    Tools t{slot, lt, handle, batched};
    for (const SeqPlan& p : sequence_plans(g.shapes)) {
        t.batched_ok = batched;
        measure_block(g, t, p);
        g.ctx.sync();  // the block's buffers are freed before the next block allocates
    }
    cublasDestroy(handle);
    g.ctx.barrier();
}

}  // namespace moesim::cal
