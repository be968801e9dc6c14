// BF16 all-gather: a size sweep, the coalesced all-gather into one flat buffer that rebuilds the
// compute weights after a distributed-optimizer step, and per-unit gathers of FSDP2 units.
// bytes = the gathered output (nccl-tests); each rank contributes bytes / n.
#include <algorithm>

#include "data_init.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "report_table.hpp"

namespace moesim::cal {

void run_allgather(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    const std::int64_t unit = 2LL * n;  // output bytes must split into n BF16 blocks
    std::vector<std::int64_t> sizes;
    for (std::int64_t b : geometric(1024, g.opts.quick ? (64LL << 20) : (4LL << 30), 2))
        if (b >= unit) sizes.push_back(b / unit * unit);
    struct Named {
        std::string label;
        std::int64_t bytes;
    };
    std::vector<Named> extra;
    if (g.shapes.allgather_flat_bytes > 0) {
        std::int64_t flat = g.shapes.allgather_flat_bytes / unit * unit;
        if (g.opts.quick) flat = std::min<std::int64_t>(flat, 256LL << 20);
        extra.push_back({"coalesced_flat", flat});
    }
    if (!g.opts.quick)
        for (const auto& u : g.shapes.fsdp_units) extra.push_back({"fsdp_unit:" + u.name, u.bytes / unit * unit});
    const std::int64_t cap = buffer_cap(g, 1.0 + 1.0 / n);
    std::int64_t need = 0;
    for (std::int64_t b : sizes)
        if (b <= cap) need = std::max(need, b);
    for (const auto& e : extra)
        if (e.bytes <= cap) need = std::max(need, e.bytes);
    if (ctx.root()) print_collective_header("all_gather bf16, out of place", n);
    const std::size_t usable =
        static_cast<std::size_t>(std::count_if(sizes.begin(), sizes.end(), [cap](std::int64_t b) { return b <= cap; }));
    skip_rest(g, "all_gather", sizes, usable,
              "exceeds the free-memory cap of " + human_bytes(static_cast<double>(cap)));
    if (need == 0) return;
    std::vector<DeviceBuffer> send, recv;
    for (auto& s : ctx.slots) {
        send.emplace_back(s.device, static_cast<std::uint64_t>(need / n));
        recv.emplace_back(s.device, static_cast<std::uint64_t>(need));
        fill_bf16(send.back().as<bf16_bits>(), static_cast<std::uint64_t>(need / unit),
                  stream_seed(g.opts.seed, kRoleAllGather, static_cast<std::uint64_t>(s.rank)), 0, s.stream);
    }
    ctx.sync();
    auto index_of = [&](const Slot& s) { return static_cast<std::size_t>(&s - ctx.slots.data()); };
    auto point = [&](const std::string& label, std::int64_t b, double est) {
        const std::int64_t sc = b / unit;  // elements each rank sends
        CollectivePoint p{"all_gather", label, "bf16", "", b, sc * n, busbw_factor_gather(n)};
        p.enqueue = [&, sc] {
            nccl_group(ctx, [&](Slot& s) {
                const std::size_t k = index_of(s);
                CAL_NCCL(ncclAllGather(send[k].get(), recv[k].get(), static_cast<std::size_t>(sc), ncclBfloat16, s.comm,
                                       s.stream));
            });
        };
        p.poison = [&, b](Slot& s) { poison(recv[index_of(s)].get(), static_cast<std::uint64_t>(b), s.stream); };
        p.check = [&, sc](Slot& s) {
            const bf16_bits* out = recv[index_of(s)].as<bf16_bits>();
            for (int r = 0; r < n; ++r)
                check_bf16(out + static_cast<std::int64_t>(r) * sc, static_cast<std::uint64_t>(sc),
                           stream_seed(g.opts.seed, kRoleAllGather, static_cast<std::uint64_t>(r)), 0, s.counter->ptr(),
                           s.stream);
        };
        p.extra.set("send_count", sc);
        return measure_collective(g, p, est);
    };
    const SweepEstimate last =
        sweep_sizes(g, "all_gather", sizes, usable, [&](std::int64_t b, double est) { return point("sweep", b, est); });
    for (const auto& e : extra) {
        if (e.bytes > cap) {
            skip_point(g, "all_gather " + e.label,
                       "needs " + human_bytes(static_cast<double>(e.bytes)) + " per GPU, over the free-memory cap");
            continue;
        }
        point(e.label, e.bytes, last.at(e.bytes));
    }
}

}  // namespace moesim::cal
