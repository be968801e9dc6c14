// Reducing collectives: FP32 all-reduce sweep, the DDP bucketed all-reduce sequence, and FP32
// reduce-scatter (sweep and FSDP units). Byte counts and bus bandwidth follow nccl-tests.
#include <algorithm>

#include "data_init.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "report_table.hpp"

namespace moesim::cal {
namespace {

std::size_t index_of(const Context& ctx, const Slot& s) { return static_cast<std::size_t>(&s - ctx.slots.data()); }

std::vector<DeviceBuffer> alloc_per_slot(Context& ctx, std::int64_t bytes) {
    std::vector<DeviceBuffer> v;
    for (auto& s : ctx.slots) v.emplace_back(s.device, static_cast<std::uint64_t>(bytes));
    return v;
}

// Fills each slot's buffer with its rank's FP32 stream of `role`.
void fill_ranks_f32(GroupEnv& g, std::vector<DeviceBuffer>& bufs, std::uint64_t role) {
    for (auto& s : g.ctx.slots) {
        CAL_CUDA(cudaSetDevice(s.device));
        DeviceBuffer& b = bufs[index_of(g.ctx, s)];
        fill_f32(b.as<float>(), b.bytes() / 4, stream_seed(g.opts.seed, role, static_cast<std::uint64_t>(s.rank)), 0,
                 s.stream);
    }
    g.ctx.sync();
}

std::size_t count_fitting(const std::vector<std::int64_t>& sizes, std::int64_t cap) {
    return static_cast<std::size_t>(
        std::count_if(sizes.begin(), sizes.end(), [cap](std::int64_t b) { return b <= cap; }));
}

}  // namespace

void run_allreduce(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    const auto sizes = geometric(1024, g.opts.quick ? (64LL << 20) : (4LL << 30), 2);
    const std::int64_t cap = buffer_cap(g, 2);
    const std::size_t usable = count_fitting(sizes, cap);
    if (ctx.root()) print_collective_header("all_reduce fp32 sum, out of place", n);
    skip_rest(g, "all_reduce", sizes, usable,
              "exceeds the free-memory cap of " + human_bytes(static_cast<double>(cap)));
    if (usable == 0) return;
    auto send = alloc_per_slot(ctx, sizes[usable - 1]);
    auto recv = alloc_per_slot(ctx, sizes[usable - 1]);
    fill_ranks_f32(g, send, kRoleAllReduce);
    sweep_sizes(g, "all_reduce", sizes, usable, [&](std::int64_t b, double est) {
        const std::int64_t count = b / 4;
        CollectivePoint p{"all_reduce", "sweep", "fp32", "sum", b, count, busbw_factor_allreduce(n)};
        p.enqueue = [&, count] {
            nccl_group(ctx, [&](Slot& s) {
                const std::size_t k = index_of(ctx, s);
                CAL_NCCL(ncclAllReduce(send[k].get(), recv[k].get(), static_cast<std::size_t>(count), ncclFloat,
                                       ncclSum, s.comm, s.stream));
            });
        };
        p.poison = [&, b](Slot& s) { poison(recv[index_of(ctx, s)].get(), static_cast<std::uint64_t>(b), s.stream); };
        p.check = [&, count](Slot& s) {
            check_sum_f32(recv[index_of(ctx, s)].as<float>(), static_cast<std::uint64_t>(count), g.opts.seed,
                          kRoleAllReduce, n, 0, 1.0f, s.counter->ptr(), s.stream);
        };
        p.extra.set("in_place", false);
        return measure_collective(g, p, est);
    });
}

void run_bucketed(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    std::vector<std::int64_t> buckets;
    for (std::int64_t b : g.shapes.buckets.bucket_bytes) buckets.push_back(b / 4 * 4);
    if (g.opts.quick && buckets.size() > 8) buckets.resize(8);
    if (ctx.root()) print_collective_header("all_reduce fp32 avg, in place: bucket sequence back to back", n);
    if (buckets.empty()) return skip_point(g, "all_reduce_bucketed", "no buckets in the shapes");
    const std::int64_t cap = buffer_cap(g, 1);
    const std::int64_t largest = *std::max_element(buckets.begin(), buckets.end());
    if (largest > cap)
        return skip_point(g, "all_reduce_bucketed",
                          "largest bucket exceeds the free-memory cap of " + human_bytes(static_cast<double>(cap)));
    // Buckets lie one after another, 256-byte aligned, in one pool; when the pool is smaller
    // than the whole gradient the layout wraps around and buffers are reused.
    std::int64_t total = 0, laid = 0;
    for (std::int64_t b : buckets) {
        total += b;
        laid += (b + 255) / 256 * 256;
    }
    const std::int64_t pool_bytes = std::min(laid, cap / 256 * 256);
    std::vector<std::int64_t> offsets;
    bool wrapped = false;
    for (std::int64_t off = 0; std::int64_t b : buckets) {
        if (off + b > pool_bytes) {
            off = 0;
            wrapped = true;
        }
        offsets.push_back(off);
        off += (b + 255) / 256 * 256;
    }
    auto pool = alloc_per_slot(ctx, pool_bytes);
    CollectivePoint p{"all_reduce_bucketed",    "bucket_sequence", "fp32", "avg", total, total / 4,
                      busbw_factor_allreduce(n)};
    p.enqueue = [&] {
        for (std::size_t j = 0; j < buckets.size(); ++j)
            nccl_group(ctx, [&](Slot& s) {
                char* base = static_cast<char*>(pool[index_of(ctx, s)].get()) + offsets[j];
                CAL_NCCL(ncclAllReduce(base, base, static_cast<std::size_t>(buckets[j] / 4), ncclFloat, ncclAvg, s.comm,
                                       s.stream));
            });
    };
    if (!wrapped) {  // in place: "poisoning" restores the inputs, the check reads them back averaged
        p.poison = [&](Slot& s) {
            DeviceBuffer& b = pool[index_of(ctx, s)];
            fill_f32(b.as<float>(), b.bytes() / 4,
                     stream_seed(g.opts.seed, kRoleBuckets, static_cast<std::uint64_t>(s.rank)), 0, s.stream);
        };
        p.check = [&](Slot& s) {
            DeviceBuffer& b = pool[index_of(ctx, s)];
            for (std::size_t j = 0; j < buckets.size(); ++j)
                check_sum_f32(reinterpret_cast<const float*>(static_cast<char*>(b.get()) + offsets[j]),
                              static_cast<std::uint64_t>(buckets[j] / 4), g.opts.seed, kRoleBuckets, n,
                              static_cast<std::uint64_t>(offsets[j] / 4), 1.0f / static_cast<float>(n),
                              s.counter->ptr(), s.stream);
        };
    } else {
        fill_ranks_f32(g, pool, kRoleBuckets);
    }
    p.extra.set("in_place", true);
    p.extra.set("buckets", static_cast<std::int64_t>(buckets.size()));
    p.extra.set("bucket_bytes", json::Value::array_of(buckets));
    p.extra.set("cap_bytes", g.shapes.buckets.cap_bytes);
    p.extra.set("pool_bytes", pool_bytes);
    p.extra.set("buffers_reused", wrapped);
    if (wrapped)
        skip_point(g, "all_reduce_bucketed check", "pool smaller than the gradient: buffers reused, not checked");
    measure_collective(g, p, 0);
}

void run_reducescatter(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    const std::int64_t unit = 4LL * n;  // input bytes must split into n FP32 blocks
    std::vector<std::int64_t> sizes;
    for (std::int64_t b : geometric(1024, g.opts.quick ? (64LL << 20) : (4LL << 30), 2))
        if (b >= unit) sizes.push_back(b / unit * unit);
    std::vector<std::pair<std::string, std::int64_t>> units;
    for (const auto& u : g.shapes.fsdp_units)
        if (!g.opts.quick) units.emplace_back(u.name, u.bytes * 2 / unit * unit);  // BF16 params -> FP32 grads
    const std::int64_t cap = buffer_cap(g, 1.0 + 1.0 / n);
    std::int64_t need = 0;
    for (std::int64_t b : sizes)
        if (b <= cap) need = std::max(need, b);
    for (const auto& u : units)
        if (u.second <= cap) need = std::max(need, u.second);
    if (ctx.root()) print_collective_header("reduce_scatter fp32 sum, out of place", n);
    const std::size_t usable = count_fitting(sizes, cap);
    skip_rest(g, "reduce_scatter", sizes, usable,
              "exceeds the free-memory cap of " + human_bytes(static_cast<double>(cap)));
    if (need == 0) return;
    auto send = alloc_per_slot(ctx, need);
    auto recv = alloc_per_slot(ctx, need / n);
    fill_ranks_f32(g, send, kRoleReduceScatter);
    auto point = [&](const std::string& label, std::int64_t b, double est) {
        const std::int64_t rc = b / unit;  // elements each rank receives
        CollectivePoint p{"reduce_scatter", label, "fp32", "sum", b, rc * n, busbw_factor_gather(n)};
        p.enqueue = [&, rc] {
            nccl_group(ctx, [&](Slot& s) {
                const std::size_t k = index_of(ctx, s);
                CAL_NCCL(ncclReduceScatter(send[k].get(), recv[k].get(), static_cast<std::size_t>(rc), ncclFloat,
                                           ncclSum, s.comm, s.stream));
            });
        };
        p.poison = [&, rc](Slot& s) {
            poison(recv[index_of(ctx, s)].get(), static_cast<std::uint64_t>(rc) * 4, s.stream);
        };
        p.check = [&, rc](Slot& s) {
            check_sum_f32(recv[index_of(ctx, s)].as<float>(), static_cast<std::uint64_t>(rc), g.opts.seed,
                          kRoleReduceScatter, n, static_cast<std::uint64_t>(s.rank) * static_cast<std::uint64_t>(rc),
                          1.0f, s.counter->ptr(), s.stream);
        };
        p.extra.set("recv_count", rc);
        return measure_collective(g, p, est);
    };
    const SweepEstimate last = sweep_sizes(g, "reduce_scatter", sizes, usable,
                                           [&](std::int64_t b, double est) { return point("sweep", b, est); });
    for (const auto& [name, b] : units) {
        if (b > cap) {
            skip_point(g, "reduce_scatter fsdp_unit:" + name, "exceeds the free-memory cap");
            continue;
        }
        point("fsdp_unit:" + name, b, last.at(b));
    }
}

}  // namespace moesim::cal
