// Shared helpers of the measurement groups (see groups.hpp).
#include "groups.hpp"

#include <algorithm>
#include <cstdio>

#include "errors.hpp"
#include "report_table.hpp"

namespace moesim::cal {

void run_group(const std::string& name, GroupEnv& g) {
    if (name == "allreduce") return run_allreduce(g);
    if (name == "bucketed") return run_bucketed(g);
    if (name == "allgather") return run_allgather(g);
    if (name == "reducescatter") return run_reducescatter(g);
    if (name == "alltoall") return run_alltoall(g);
    if (name == "sendrecv") return run_sendrecv(g);
    if (name == "gemm") return run_gemm(g);
    if (name == "grouped_gemm") return run_grouped_gemm(g);
    if (name == "memory") return run_memory(g);
    if (name == "interference") {
        run_interference(g);
        return run_interference_comm(g);
    }
    if (name == "sequence") return run_sequence(g);
    throw HarnessError("unknown measurement group '" + name + "'");
}

std::int64_t buffer_cap(GroupEnv& g, double buffers) {
    const double free_b = static_cast<double>(g.ctx.min_free_bytes());
    const double usable = std::max(0.0, free_b * 0.85 - static_cast<double>(1LL << 30));
    auto cap = static_cast<std::int64_t>(usable / std::max(1.0, buffers));
    if (g.opts.max_bytes > 0) cap = std::min(cap, g.opts.max_bytes);
    return cap;
}

void skip_point(GroupEnv& g, const std::string& what, const std::string& reason) {
    g.budget.skip(what, reason);
    if (g.ctx.root()) print_skip(what, reason);
}

void emit(GroupEnv& g, json::Value rec) {
    if (g.ctx.root()) g.out.add(std::move(rec));
}

std::uint64_t checked_run(GroupEnv& g, const std::function<void(Slot&)>& poison_outputs,
                          const std::function<void()>& enqueue, const std::function<void(Slot&)>& check_outputs) {
    for (auto& s : g.ctx.slots) {
        CAL_CUDA(cudaSetDevice(s.device));
        s.counter->reset(s.stream);
        poison_outputs(s);
    }
    enqueue();
    g.ctx.sync();
    std::uint64_t bad = 0;
    for (auto& s : g.ctx.slots) {
        CAL_CUDA(cudaSetDevice(s.device));
        check_outputs(s);
        bad += s.counter->read(s.stream);
    }
    return g.ctx.sum_over_procs(bad);
}

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g %s", b, units[u]);
    return buf;
}

std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t hi, std::int64_t factor) {
    std::vector<std::int64_t> v;
    for (std::int64_t x = lo; x <= hi; x *= factor) v.push_back(x);
    return v;
}

void nccl_group(Context& ctx, const std::function<void(Slot&)>& body) {
    CAL_NCCL(ncclGroupStart());
    for (auto& s : ctx.slots) body(s);
    CAL_NCCL(ncclGroupEnd());
}

bool measure_collective(GroupEnv& g, CollectivePoint& p, double est_iter_s) {
    const std::string what = p.kind + " " + p.label + " " + std::to_string(p.bytes) + " B";
    if (!g.timer.affordable(est_iter_s)) {
        skip_point(g, what, stop_requested() ? "interrupted" : "time budget");
        return false;
    }
    MeasurementScope scope(what);
    json::Value rec = base_record(p.kind, g.group, p.label, p.dtype, g.ctx.world);
    std::string check = "skipped";
    std::uint64_t bad = 0;
    if (p.poison) {
        bad = checked_run(g, p.poison, p.enqueue, p.check);
        check = bad ? "failed" : "ok";
    }
    const TimedRun r = g.timer.run(all_slots(g.ctx), true, p.enqueue);
    if (!p.redop.empty()) rec.set("op", p.redop);
    rec.set("count", p.count);
    add_bandwidth(rec, p.bytes, p.bus_factor, r);
    add_timing(rec, r);
    for (const auto& m : p.extra.members()) rec.set(m.first, m.second);
    if (p.poison)
        add_check(rec, bad);
    else
        rec.set("check", "skipped");
    const double algbw = r.stats.median > 0 ? static_cast<double>(p.bytes) / (r.stats.median * 1e3) : 0;
    if (g.ctx.root())
        print_collective_row(p.bytes, p.count, p.dtype, p.redop.empty() ? "none" : p.redop, p.label, r, algbw,
                             algbw * p.bus_factor, check);
    emit(g, std::move(rec));
    return true;
}

void skip_rest(GroupEnv& g, const std::string& kind, const std::vector<std::int64_t>& sizes, std::size_t from,
               const std::string& reason) {
    if (from >= sizes.size()) return;
    skip_point(g, kind + " sizes " + std::to_string(sizes[from]) + ".." + std::to_string(sizes.back()) + " B", reason);
}

SweepEstimate sweep_sizes(GroupEnv& g, const std::string& kind, const std::vector<std::int64_t>& sizes,
                          std::size_t count, const std::function<bool(std::int64_t bytes, double est_s)>& point) {
    SweepEstimate e;
    for (std::size_t i = 0; i < count && i < sizes.size(); ++i) {
        if (!point(sizes[i], e.at(sizes[i]))) {
            skip_rest(g, kind, sizes, i + 1, "time budget");
            break;
        }
        e.last_s = g.timer.last_iter_s();
        e.last_bytes = static_cast<double>(sizes[i]);
    }
    return e;
}

}  // namespace moesim::cal
