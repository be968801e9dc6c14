// Memory-bound group on the first GPU: device-to-device copy (cudaMemcpyAsync), BF16-into-FP32
// gradient accumulation, fused AdamW over FP32 shards. GB/s counts bytes read plus written.
// Small sizes rotate over several buffer copies so that they are not served from L2.
#include <algorithm>
#include <functional>

#include "check.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "memory_kernels.hpp"
#include "report_table.hpp"

namespace moesim::cal {
namespace {

struct Kernel {
    std::string kind;
    double bytes_per_element;               // moved per element per iteration
    std::int64_t arrays_bytes_per_element;  // resident bytes per element (all arrays)
};

int copies_for(std::int64_t set_bytes, int l2) {
    return static_cast<int>(
        std::min<std::int64_t>(256, std::max<std::int64_t>(1, (3LL * l2 + set_bytes - 1) / set_bytes)));
}

}  // namespace

void run_memory(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    CAL_CUDA(cudaSetDevice(slot.device));
    int l2 = 0;
    CAL_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, slot.device));
    if (g.ctx.root())
        print_rate_header("memory-bound kernels on device " + std::to_string(slot.device) + " (bytes read + written)",
                          "GB/s");
    const std::int64_t cap = buffer_cap(g, 1);
    const std::vector<Kernel> kernels = {{"memcpy_d2d", 4.0, 4},  // counted per BF16 element: 2 read + 2 written
                                         {"grad_accum_bf16_to_fp32", kGradAccumBytesPerElement, 6},
                                         {"adamw_fp32", kAdamWBytesPerElement, 16}};
    const auto counts = geometric(1LL << 18, g.opts.quick ? (1LL << 24) : (1LL << 30), 4);
    const AdamWHyper hyper = adamw_at_step(10);
    const float v_scale = 0.01f;
    const std::uint64_t seed = g.opts.seed;
    for (const auto& k : kernels) {
        double last_s = 0, last_n = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) {
            const std::int64_t n = counts[i];
            const std::int64_t set_bytes = n * k.arrays_bytes_per_element;
            const int copies = copies_for(set_bytes, l2);
            const std::string what = k.kind + " " + std::to_string(n) + " elements";
            if (set_bytes * copies > cap) {
                skip_point(g, what, "exceeds the free-memory cap");
                break;
            }
            if (!g.timer.affordable(extrapolate_s(last_s, last_n, static_cast<double>(n)))) {
                skip_point(g, what + " and larger", stop_requested() ? "interrupted" : "time budget");
                break;
            }
            MeasurementScope scope(what);
            const auto total = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(copies);
            const auto un = static_cast<std::uint64_t>(n);
            std::vector<DeviceBuffer> bufs;
            std::function<void(int)> launch;  // one iteration on copy j
            std::function<void()> prepare, verify;
            if (k.kind == "memcpy_d2d") {
                bufs.emplace_back(slot.device, 2 * total);
                bufs.emplace_back(slot.device, 2 * total);
                fill_bf16(bufs[0].as<bf16_bits>(), total, stream_seed(seed, kRoleMemSrc, 0), 0, slot.stream);
                launch = [&, un](int j) {
                    CAL_CUDA(cudaMemcpyAsync(bufs[1].as<bf16_bits>() + j * un, bufs[0].as<bf16_bits>() + j * un, 2 * un,
                                             cudaMemcpyDeviceToDevice, slot.stream));
                };
                prepare = [&, un] { poison(bufs[1].get(), 2 * un, slot.stream); };
                verify = [&, un] {
                    check_bf16(bufs[1].as<bf16_bits>(), un, stream_seed(seed, kRoleMemSrc, 0), 0, slot.counter->ptr(),
                               slot.stream);
                };
            } else if (k.kind == "grad_accum_bf16_to_fp32") {
                bufs.emplace_back(slot.device, 4 * total);
                bufs.emplace_back(slot.device, 2 * total);
                fill_bf16(bufs[1].as<bf16_bits>(), total, stream_seed(seed, kRoleMemGrad, 0), 0, slot.stream);
                launch = [&, un](int j) {
                    grad_accum_bf16_to_f32(bufs[0].as<float>() + j * un, bufs[1].as<bf16_bits>() + j * un, un,
                                           slot.stream);
                };
                prepare = [&, total] {
                    fill_f32(bufs[0].as<float>(), total, stream_seed(seed, kRoleMemAcc, 0), 0, slot.stream);
                };
                verify = [&, un] {
                    check_grad_accum(bufs[0].as<float>(), un, stream_seed(seed, kRoleMemAcc, 0),
                                     stream_seed(seed, kRoleMemGrad, 0), slot.counter->ptr(), slot.stream);
                };
            } else {
                for (int a = 0; a < 4; ++a) bufs.emplace_back(slot.device, 4 * total);
                fill_f32(bufs[1].as<float>(), total, stream_seed(seed, kRoleAdamG, 0), 0, slot.stream);
                launch = [&, un](int j) {
                    adamw_f32(bufs[0].as<float>() + j * un, bufs[1].as<float>() + j * un, bufs[2].as<float>() + j * un,
                              bufs[3].as<float>() + j * un, un, hyper, slot.stream);
                };
                prepare = [&, total] {
                    fill_f32(bufs[0].as<float>(), total, stream_seed(seed, kRoleAdamP, 0), 0, slot.stream);
                    fill_f32(bufs[2].as<float>(), total, stream_seed(seed, kRoleAdamM, 0), 0, slot.stream);
                    fill_f32_abs(bufs[3].as<float>(), total, stream_seed(seed, kRoleAdamV, 0), v_scale, slot.stream);
                };
                verify = [&, un] {
                    check_adamw(bufs[0].as<float>(), bufs[2].as<float>(), bufs[3].as<float>(), un,
                                stream_seed(seed, kRoleAdamP, 0), stream_seed(seed, kRoleAdamG, 0),
                                stream_seed(seed, kRoleAdamM, 0), stream_seed(seed, kRoleAdamV, 0), v_scale, hyper,
                                slot.counter->ptr(), slot.stream);
                };
            }
            // Correctness: fresh inputs, exactly one application on copy 0, full comparison.
            slot.counter->reset(slot.stream);
            prepare();
            launch(0);
            verify();
            const std::uint64_t bad = slot.counter->read(slot.stream);
            int it = 0;
            const TimedRun r = g.timer.run({&slot}, false, [&] { launch(it++ % copies); });
            const double moved = k.bytes_per_element * static_cast<double>(n);
            const double gbps = r.stats.median > 0 ? moved / (r.stats.median * 1e3) : 0;
            json::Value rec = base_record(k.kind, g.group, "sweep",
                                          k.kind == "memcpy_d2d"   ? "bf16"
                                          : k.kind == "adamw_fp32" ? "fp32"
                                                                   : "bf16->fp32",
                                          1);
            rec.set("elements", n);
            rec.set("bytes", static_cast<std::int64_t>(moved));
            rec.set("bytes_per_element", k.bytes_per_element);
            rec.set("buffer_copies", copies);
            add_timing(rec, r);
            rec.set("GBps", gbps);
            add_check(rec, bad);
            if (g.ctx.root()) print_rate_row(what, static_cast<std::int64_t>(moved), r, gbps, bad ? "failed" : "ok");
            emit(g, std::move(rec));
            last_s = g.timer.last_iter_s();
            last_n = static_cast<double>(n);
        }
    }
    g.ctx.barrier();
}

}  // namespace moesim::cal
