// Grouped GEMM of routed experts: per-expert row counts from seeded top-K routing of T tokens
// over E experts, each expert's GEMM with its own rows. Two methods where available:
// cublasGemmGroupedBatchedEx (cuBLAS 12.5+, one call) and one cuBLASLt call per expert spread
// over four streams. The record's "method" says which.
#include <algorithm>
#include <cmath>
#include <memory>

#include "errors.hpp"
#include "gemm.hpp"
#include "grouped_ops.hpp"
#include "groups.hpp"
#include "report_table.hpp"
#include "routing.hpp"

namespace moesim::cal {
namespace {

// Enqueues all experts' GEMMs with one method; false when the method is unavailable here.
using Enqueue = std::function<void()>;

// Expert e runs on helper stream e % 4 with that stream's own handle and workspace.
Enqueue per_expert_lt(std::vector<std::unique_ptr<LtGemm>>& lts, const Slot& slot, GroupedOperands& g,
                      std::vector<std::shared_ptr<LtGemm::Plan>>& plans, std::vector<cudaStream_t>& streams,
                      std::vector<cudaEvent_t>& events) {
    return [&lts, &slot, &g, &plans, &streams, &events] {
        // Fork: the helper streams wait for the main stream, then the main stream joins them.
        CAL_CUDA(cudaEventRecord(events[0], slot.stream));
        for (auto st : streams) CAL_CUDA(cudaStreamWaitEvent(st, events[0], 0));
        for (std::size_t e = 0; e < g.experts.size(); ++e) {
            const ExpertProblem& p = g.experts[e];
            lts[e % lts.size()]->run(*plans[e], g.x.as<bf16_bits>() + p.off_x, g.w.as<bf16_bits>() + p.off_w,
                                     g.c.as<bf16_bits>() + p.off_c, streams[e % streams.size()]);
        }
        for (std::size_t i = 0; i < streams.size(); ++i) {
            CAL_CUDA(cudaEventRecord(events[i + 1], streams[i]));
            CAL_CUDA(cudaStreamWaitEvent(slot.stream, events[i + 1], 0));
        }
    };
}

}  // namespace

void run_grouped_gemm(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    const auto& cfg = g.shapes.grouped;
    if (g.ctx.root()) print_gemm_header("grouped BF16 GEMM of routed experts on device " + std::to_string(slot.device));
    LtGemm lt(slot.device);
    CAL_CUDA(cudaSetDevice(slot.device));
    // Concurrent cuBLASLt calls must not share a workspace: one handle and workspace per stream.
    std::vector<std::unique_ptr<LtGemm>> lts;
    for (int i = 0; i < 4; ++i) lts.push_back(std::make_unique<LtGemm>(slot.device));
    std::vector<cudaStream_t> streams(4);
    std::vector<cudaEvent_t> events(5);
    for (auto& st : streams) CAL_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (auto& ev : events) CAL_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cublasHandle_t handle = nullptr;
    CAL_CUBLAS(cublasCreate(&handle));
    CAL_CUBLAS(cublasSetStream(handle, slot.stream));
    CAL_CUBLAS(cublasSetWorkspace(handle, lt.workspace(), LtGemm::kWorkspaceBytes));
    std::vector<double> skews = cfg.zipf_s.empty() ? std::vector<double>{0.0} : cfg.zipf_s;
    std::vector<GroupedGemmShape> shapes = cfg.gemms;
    if (g.opts.quick && shapes.size() > 2) shapes.resize(2);
    bool stop = false;
    for (double skew : skews) {
        const auto rows = route_rows(cfg.tokens, cfg.experts, cfg.top_k, skew, cfg.seed, cfg.seed + 1);
        for (const auto& s : shapes) {
            for (const char* method : {"cublasGemmGroupedBatchedEx", "cublasLt_per_expert_4streams"}) {
                const std::string what =
                    "grouped_gemm " + s.name + " zipf_s=" + json::format_double(skew) + " " + method;
                const bool grouped_api = std::string(method) == "cublasGemmGroupedBatchedEx";
                if (grouped_api && !MOESIM_HAVE_GROUPED_BATCHED) {
                    skip_point(g, what, "cuBLAS older than 12.5");
                    continue;
                }
                if (stop || !g.timer.affordable(0)) {
                    stop = true;
                    skip_point(g, what, stop_requested() ? "interrupted" : "time budget");
                    continue;
                }
                MeasurementScope scope(what);
                GroupedOperands op = make_grouped(slot, s, rows, cfg.seed);
                Enqueue enqueue;
                std::vector<std::shared_ptr<LtGemm::Plan>> plans;
                std::unique_ptr<GroupedBatched> batched;
                if (grouped_api) {
                    batched = std::make_unique<GroupedBatched>(slot, handle, op);
                    // A library that rejects this type combination is a skip, not a failed run.
                    const cublasStatus_t probe = batched->call();
                    if (probe == CUBLAS_STATUS_NOT_SUPPORTED || probe == CUBLAS_STATUS_INVALID_VALUE) {
                        skip_point(g, what,
                                   std::string("cublasGemmGroupedBatchedEx returned ") + cublas_status_name(probe));
                        continue;
                    }
                    CAL_CUBLAS(probe);
                    enqueue = [&batched] { CAL_CUBLAS(batched->call()); };
                } else {
                    for (const auto& p : op.experts) {
                        plans.push_back(lt.plan(p.dims));
                        if (!plans.back()) break;
                    }
                    if (plans.empty() || !plans.back()) {
                        skip_point(g, what, "cuBLASLt heuristic returned no algorithm");
                        continue;
                    }
                    enqueue = per_expert_lt(lts, slot, op, plans, streams, events);
                }
                poison(op.c.get(), op.c.bytes(), slot.stream);
                enqueue();
                const double err = grouped_error(op, slot.stream);
                const TimedRun r = g.timer.run({&slot}, false, enqueue);
                const double tflops = r.stats.median > 0 ? op.flops / (r.stats.median * 1e-6) / 1e12 : 0;
                json::Value rec = base_record("grouped_gemm", g.group, s.name, "bf16", 1);
                rec.set("method", method);
                rec.set("layout", layout_name(s.layout));
                rec.set("rows_dim", std::string(1, s.rows_dim));
                rec.set("m", s.rows_dim == 'm' ? json::Value("rows") : json::Value(s.m));
                rec.set("n", s.n);
                rec.set("k", s.rows_dim == 'k' ? json::Value("rows") : json::Value(s.k));
                rec.set("tokens", cfg.tokens);
                rec.set("experts", cfg.experts);
                rec.set("top_k", cfg.top_k);
                rec.set("zipf_s", skew);
                rec.set("seed", cfg.seed);
                rec.set("rows_per_expert", json::Value::array_of(rows));
                rec.set("active_experts", static_cast<std::int64_t>(op.experts.size()));
                rec.set("flops", op.flops);
                add_timing(rec, r);
                rec.set("tflops", tflops);
                rec.set("check", err <= kGemmTolerance ? "ok" : "failed");
                rec.set("check_rel_error", std::isfinite(err) ? json::Value(err) : json::Value());
                if (g.ctx.root())
                    print_gemm_row(s.name + (grouped_api ? " [grouped]" : " [lt x4]"), s.rows_dim == 'm' ? 0 : s.m, s.n,
                                   s.rows_dim == 'k' ? 0 : s.k, layout_name(s.layout), r, tflops,
                                   err <= kGemmTolerance ? "ok" : "failed");
                emit(g, std::move(rec));
            }
        }
    }
    cublasDestroy(handle);
    for (auto st : streams) cudaStreamDestroy(st);
    for (auto ev : events) cudaEventDestroy(ev);
    g.ctx.barrier();
}

}  // namespace moesim::cal
