// Expert-parallel all-to-all (ncclSend/ncclRecv pairs in one group) with uniform and routed
// (seeded, Zipf-skewed) row counts, rows of d BF16 values; and plain send/recv between pairs.
#include <algorithm>

#include "data_init.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "report_table.hpp"
#include "routing.hpp"

namespace moesim::cal {
namespace {

using Matrix = std::vector<std::vector<std::int64_t>>;

struct Layout2 {  // row offsets of each peer's chunk in the send and receive buffers
    Matrix send_off, recv_off;
    std::vector<std::int64_t> send_rows, recv_rows;
};

Layout2 offsets(const Matrix& c) {
    const std::size_t n = c.size();
    Layout2 l{Matrix(n, std::vector<std::int64_t>(n)), Matrix(n, std::vector<std::int64_t>(n)),
              std::vector<std::int64_t>(n), std::vector<std::int64_t>(n)};
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t p = 0; p < n; ++p) {
            l.send_off[r][p] = l.send_rows[r];
            l.send_rows[r] += c[r][p];
            l.recv_off[p][r] = l.recv_rows[p];  // chunk from r lands in p's buffer
            l.recv_rows[p] += c[r][p];
        }
    return l;
}

json::Value matrix_json(const Matrix& m) {
    json::Value a = json::Value::array();
    for (const auto& row : m) a.push_back(json::Value::array_of(row));
    return a;
}

}  // namespace

void run_alltoall(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    const auto& cfg = g.shapes.alltoall;
    const std::int64_t d = cfg.d, row_bytes = 2 * d;
    struct Case {
        std::string label;
        Matrix counts;
        double zipf_s;
    };
    std::vector<Case> cases;
    const std::int64_t top = g.opts.quick ? std::max<std::int64_t>(n, cfg.rows_per_rank / 16) : 4 * cfg.rows_per_rank;
    for (std::int64_t rows : geometric(n, top, 2))
        cases.push_back({"uniform", alltoall_counts(n, rows, 1, 1, -1, 0), -1});
    for (double s : cfg.zipf_s)
        cases.push_back({"routed_zipf_s=" + json::format_double(s),
                         alltoall_counts(n, cfg.rows_per_rank, cfg.experts, cfg.top_k, s, cfg.seed), s});
    const std::int64_t cap = buffer_cap(g, 2);
    std::int64_t send_need = 0, recv_need = 0;
    std::vector<Layout2> layouts;
    for (const auto& c : cases) {
        layouts.push_back(offsets(c.counts));
        const auto& l = layouts.back();
        const std::int64_t s = *std::max_element(l.send_rows.begin(), l.send_rows.end()) * row_bytes;
        const std::int64_t r = *std::max_element(l.recv_rows.begin(), l.recv_rows.end()) * row_bytes;
        if (s <= cap && r <= cap) {
            send_need = std::max(send_need, s);
            recv_need = std::max(recv_need, r);
        }
    }
    if (ctx.root()) print_collective_header("alltoall bf16 rows of " + std::to_string(d) + " (send/recv group)", n);
    if (send_need == 0) return skip_point(g, "all_to_all", "no case fits the free-memory cap");
    std::vector<DeviceBuffer> send, recv;
    for (auto& s : ctx.slots) {
        send.emplace_back(s.device, static_cast<std::uint64_t>(send_need));
        recv.emplace_back(s.device, static_cast<std::uint64_t>(recv_need));
        fill_bf16(send.back().as<bf16_bits>(), static_cast<std::uint64_t>(send_need / 2),
                  stream_seed(g.opts.seed, kRoleAllToAll, static_cast<std::uint64_t>(s.rank)), 0, s.stream);
    }
    ctx.sync();
    auto index_of = [&](const Slot& s) { return static_cast<std::size_t>(&s - ctx.slots.data()); };
    double last_s = 0, last_b = 0;
    bool out_of_time = false;
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
        const Matrix& c = cases[ci].counts;
        const Layout2& l = layouts[ci];
        const std::int64_t rows = l.send_rows[0], bytes = rows * row_bytes;
        const std::int64_t max_send = *std::max_element(l.send_rows.begin(), l.send_rows.end());
        const std::int64_t max_recv = *std::max_element(l.recv_rows.begin(), l.recv_rows.end());
        const std::string what = "all_to_all " + cases[ci].label + " rows " + std::to_string(rows);
        if (max_send * row_bytes > send_need || max_recv * row_bytes > recv_need) {
            skip_point(g, what, "exceeds the free-memory cap");
            continue;
        }
        if (out_of_time && cases[ci].label == "uniform") {
            skip_point(g, what, "time budget");
            continue;
        }
        CollectivePoint p{"all_to_all", cases[ci].label, "bf16", "", bytes, rows * d, busbw_factor_gather(n)};
        p.enqueue = [&] {
            nccl_group(ctx, [&](Slot& s) {
                const auto r = static_cast<std::size_t>(s.rank);
                const auto* sb = send[index_of(s)].as<bf16_bits>();
                auto* rb = recv[index_of(s)].as<bf16_bits>();
                for (std::size_t q = 0; q < c.size(); ++q) {
                    if (c[r][q])
                        CAL_NCCL(ncclSend(sb + l.send_off[r][q] * d, static_cast<std::size_t>(c[r][q] * d),
                                          ncclBfloat16, static_cast<int>(q), s.comm, s.stream));
                    if (c[q][r])
                        CAL_NCCL(ncclRecv(rb + l.recv_off[r][q] * d, static_cast<std::size_t>(c[q][r] * d),
                                          ncclBfloat16, static_cast<int>(q), s.comm, s.stream));
                }
            });
        };
        p.poison = [&](Slot& s) {
            poison(recv[index_of(s)].get(),
                   static_cast<std::uint64_t>(l.recv_rows[static_cast<std::size_t>(s.rank)] * row_bytes), s.stream);
        };
        p.check = [&](Slot& s) {
            const auto r = static_cast<std::size_t>(s.rank);
            for (std::size_t q = 0; q < c.size(); ++q)
                check_bf16(recv[index_of(s)].as<bf16_bits>() + l.recv_off[r][q] * d,
                           static_cast<std::uint64_t>(c[q][r] * d), stream_seed(g.opts.seed, kRoleAllToAll, q),
                           static_cast<std::uint64_t>(l.send_off[q][r] * d), s.counter->ptr(), s.stream);
        };
        p.extra.set("d", d);
        p.extra.set("row_bytes", row_bytes);
        p.extra.set("rows_per_rank", rows);
        if (cases[ci].zipf_s >= 0) {
            p.extra.set("zipf_s", cases[ci].zipf_s);
            p.extra.set("experts", cfg.experts);
            p.extra.set("top_k", cfg.top_k);
            p.extra.set("seed", cfg.seed);
        }
        p.extra.set("max_send_rows", max_send);
        p.extra.set("max_recv_rows", max_recv);
        p.extra.set("counts", matrix_json(c));
        const double est =
            cases[ci].label == "uniform" ? extrapolate_s(last_s, last_b, static_cast<double>(bytes)) : last_s;
        if (!measure_collective(g, p, est)) {
            out_of_time = true;
            continue;
        }
        if (cases[ci].label == "uniform") {
            last_s = g.timer.last_iter_s();
            last_b = static_cast<double>(bytes);
        }
    }
}

void run_sendrecv(GroupEnv& g) {
    Context& ctx = g.ctx;
    const int n = ctx.world;
    if (ctx.root()) print_collective_header("sendrecv bf16 between two GPUs (others idle)", n);
    if (n < 2) return skip_point(g, "send_recv", "needs at least 2 GPUs (group size 1)");
    std::vector<std::pair<int, int>> pairs{{0, 1}};
    if (n > 2) pairs.emplace_back(0, n - 1);
    const auto sizes = geometric(1024, g.opts.quick ? (16LL << 20) : (1LL << 30), 2);
    const std::int64_t cap = buffer_cap(g, 2);
    std::int64_t need = 0;
    for (std::int64_t b : sizes)
        if (b <= cap) need = b;
    if (need == 0) return skip_point(g, "send_recv", "no size fits the free-memory cap");
    std::vector<DeviceBuffer> send, recv;
    for (auto& s : ctx.slots) {
        send.emplace_back(s.device, static_cast<std::uint64_t>(need));
        recv.emplace_back(s.device, static_cast<std::uint64_t>(need));
        fill_bf16(send.back().as<bf16_bits>(), static_cast<std::uint64_t>(need / 2),
                  stream_seed(g.opts.seed, kRoleSendRecv, static_cast<std::uint64_t>(s.rank)), 0, s.stream);
    }
    ctx.sync();
    auto index_of = [&](const Slot& s) { return static_cast<std::size_t>(&s - ctx.slots.data()); };
    const auto fitting = static_cast<std::size_t>(
        std::count_if(sizes.begin(), sizes.end(), [need](std::int64_t x) { return x <= need; }));
    for (const auto& [a, b] : pairs) {
        const std::string label = "pair:" + std::to_string(a) + "->" + std::to_string(b);
        sweep_sizes(g, "send_recv " + label, sizes, fitting, [&, a = a, b = b](std::int64_t bytes, double est) {
            const std::int64_t count = bytes / 2;
            CollectivePoint p{"send_recv", label, "bf16", "", bytes, count, 1.0};
            p.enqueue = [&, count, a, b] {
                nccl_group(ctx, [&](Slot& s) {
                    if (s.rank == a)
                        CAL_NCCL(ncclSend(send[index_of(s)].get(), static_cast<std::size_t>(count), ncclBfloat16, b,
                                          s.comm, s.stream));
                    if (s.rank == b)
                        CAL_NCCL(ncclRecv(recv[index_of(s)].get(), static_cast<std::size_t>(count), ncclBfloat16, a,
                                          s.comm, s.stream));
                });
            };
            p.poison = [&, bytes](Slot& s) {
                poison(recv[index_of(s)].get(), static_cast<std::uint64_t>(bytes), s.stream);
            };
            p.check = [&, count, a, b](Slot& s) {
                if (s.rank == b)
                    check_bf16(recv[index_of(s)].as<bf16_bits>(), static_cast<std::uint64_t>(count),
                               stream_seed(g.opts.seed, kRoleSendRecv, static_cast<std::uint64_t>(a)), 0,
                               s.counter->ptr(), s.stream);
            };
            p.extra.set("src_rank", a);
            p.extra.set("dst_rank", b);
            return measure_collective(g, p, est);
        });
    }
}

}  // namespace moesim::cal
