// Memory-bound group on the first GPU: device-to-device copy (cudaMemcpyAsync), BF16-into-FP32
// gradient accumulation, fused AdamW over FP32 shards, then the other kernel classes
// (memory_class_bench.cpp). GB/s counts bytes read plus written. Small sizes rotate over several
// buffer copies so that they are not served from L2.
#include <algorithm>
#include <functional>

#include "check.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "memory_bench.hpp"
#include "memory_kernels.hpp"
#include "report_table.hpp"

namespace moesim::cal {
namespace {

int copies_for(std::int64_t set_bytes, int l2) {
    return static_cast<int>(
        std::min<std::int64_t>(256, std::max<std::int64_t>(1, (3LL * l2 + set_bytes - 1) / set_bytes)));
}

}  // namespace

const bf16_bits* add_bf16_source(std::vector<DeviceBuffer>& bufs, const Slot& slot, std::uint64_t total,
                                 std::uint64_t seed) {
    bufs.emplace_back(slot.device, 2 * total);
    fill_bf16(bufs.back().as<bf16_bits>(), total, stream_seed(seed, kRoleMemSrc, 0), 0, slot.stream);
    return bufs.back().as<bf16_bits>();
}

std::vector<std::int64_t> memory_counts(const GroupEnv& g) {
    return geometric(1LL << 18, g.opts.quick ? (1LL << 24) : (1LL << 30), 4);
}

void sweep_memory_kernel(GroupEnv& g, const MemoryKernelSpec& k, const std::vector<std::int64_t>& counts) {
    Slot& slot = g.ctx.first();
    CAL_CUDA(cudaSetDevice(slot.device));
    int l2 = 0;
    CAL_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, slot.device));
    const std::int64_t cap = buffer_cap(g, 1);
    double last_s = 0, last_n = 0;
    for (const std::int64_t n : counts) {
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
        std::vector<DeviceBuffer> bufs;
        const MemoryActions act = k.setup(n, copies, bufs);
        // Correctness: fresh inputs, exactly one application on copy 0, full comparison.
        slot.counter->reset(slot.stream);
        act.prepare();
        act.launch(0);
        act.verify();
        const std::uint64_t bad = slot.counter->read(slot.stream);
        int it = 0;
        const TimedRun r = g.timer.run({&slot}, false, [&] { act.launch(it++ % copies); });
        const double moved = k.bytes_per_element * static_cast<double>(n);
        const double gbps = r.stats.median > 0 ? moved / (r.stats.median * 1e3) : 0;
        json::Value rec = base_record(k.kind, g.group, k.label, k.dtype, 1);
        rec.set("elements", n);
        rec.set("bytes", static_cast<std::int64_t>(moved));
        rec.set("bytes_per_element", k.bytes_per_element);
        rec.set("buffer_copies", copies);
        for (const auto& m : k.extra.members()) rec.set(m.first, m.second);
        add_timing(rec, r);
        rec.set("GBps", gbps);
        add_check(rec, bad);
        if (g.ctx.root()) print_rate_row(what, static_cast<std::int64_t>(moved), r, gbps, bad ? "failed" : "ok");
        emit(g, std::move(rec));
        last_s = g.timer.last_iter_s();
        last_n = static_cast<double>(n);
    }
}

void run_memory(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    if (g.ctx.root())
        print_rate_header("memory-bound kernels on device " + std::to_string(slot.device) + " (bytes read + written)",
                          "GB/s");
    const AdamWHyper hyper = adamw_at_step(10);
    const float v_scale = 0.01f;
    const std::uint64_t seed = g.opts.seed;
    const cudaStream_t st = slot.stream;
    unsigned long long* counter = slot.counter->ptr();
    MemoryKernelSpec copy{"memcpy_d2d", "sweep", "bf16", 4.0, 4};  // per BF16 element: 2 read + 2 written
    copy.setup = [&](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
        const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
        const bf16_bits* src = add_bf16_source(bufs, slot, total, seed);
        bufs.emplace_back(slot.device, 2 * total);
        bf16_bits* dst = bufs.back().as<bf16_bits>();
        return MemoryActions{
            [=](int j) { CAL_CUDA(cudaMemcpyAsync(dst + j * un, src + j * un, 2 * un, cudaMemcpyDeviceToDevice, st)); },
            [=] { poison(dst, 2 * un, st); },
            [=] { check_bf16(dst, un, stream_seed(seed, kRoleMemSrc, 0), 0, counter, st); }};
    };
    MemoryKernelSpec accum{"grad_accum_bf16_to_fp32", "sweep", "bf16->fp32", kGradAccumBytesPerElement, 6};
    accum.setup = [&](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
        const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
        bufs.emplace_back(slot.device, 4 * total);
        bufs.emplace_back(slot.device, 2 * total);
        fill_bf16(bufs[1].as<bf16_bits>(), total, stream_seed(seed, kRoleMemGrad, 0), 0, st);
        float* acc = bufs[0].as<float>();
        const bf16_bits* grad = bufs[1].as<bf16_bits>();
        return MemoryActions{[=](int j) { grad_accum_bf16_to_f32(acc + j * un, grad + j * un, un, st); },
                             [=] { fill_f32(acc, total, stream_seed(seed, kRoleMemAcc, 0), 0, st); },
                             [=] {
                                 check_grad_accum(acc, un, stream_seed(seed, kRoleMemAcc, 0),
                                                  stream_seed(seed, kRoleMemGrad, 0), counter, st);
                             }};
    };
    MemoryKernelSpec adamw{"adamw_fp32", "sweep", "fp32", kAdamWBytesPerElement, 16};
    adamw.setup = [&](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
        const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
        for (int a = 0; a < 4; ++a) bufs.emplace_back(slot.device, 4 * total);
        fill_f32(bufs[1].as<float>(), total, stream_seed(seed, kRoleAdamG, 0), 0, st);
        float *p = bufs[0].as<float>(), *grad = bufs[1].as<float>(), *m = bufs[2].as<float>(), *v = bufs[3].as<float>();
        return MemoryActions{
            [=](int j) { adamw_f32(p + j * un, grad + j * un, m + j * un, v + j * un, un, hyper, st); },
            [=] { reset_adamw_state(p, m, v, total, seed, v_scale, st); },
            [=] { check_adamw_state(p, m, v, un, seed, v_scale, hyper, counter, st); }};
    };
    for (const auto* k : {&copy, &accum, &adamw}) sweep_memory_kernel(g, *k, memory_counts(g));
    run_memory_classes(g);
    g.ctx.barrier();
}

}  // namespace moesim::cal
