// The memory group's kernel classes (models/common/cost_types.hpp MemoryKernel), one kernel each,
// on the first GPU: a BF16 -> FP32 cast (elementwise), the MoE permute as a row gather of
// d_model-wide rows (permute), a row softmax over vocabulary-wide rows (cross_entropy), and AdamW
// over one MoE block's per-rank parameter shards in one multi-tensor launch (optimizer). The
// fitter turns each class's best GB/s over the copy rate into compute.hbm_fraction_by_kernel.
#include <algorithm>

#include "errors.hpp"
#include "memory_bench.hpp"
#include "memory_classes.hpp"
#include "report_table.hpp"

namespace moesim::cal {
namespace {

// The class sweeps stop at 256 Mi elements: past L2 by far (a 50 MiB L2 on H100/H200) and at
// least 1 GiB moved, the fitter's 256 MiB floor with room, while leaving the group's share to the
// streaming sweeps above.
constexpr std::int64_t kLargestClassElements = 1LL << 28;
// PyTorch's multi_tensor_apply hands each block chunks of 65536 elements (kChunkSize in
// aten/src/ATen/native/cuda/MultiTensorApply.cuh).
constexpr std::uint64_t kChunkElements = 65536;
// Olmo-core's per-tensor sharding (DESIGN.md): a tensor is split over the D ranks only when
// numel >= 4096 and numel % D == 0, else each rank holds it whole.
constexpr std::int64_t kMinShardedNumel = 4096;

// The memory group's counts that hold whole rows of `row`, capped for the classes.
std::vector<std::int64_t> whole_rows(const GroupEnv& g, std::int64_t row) {
    std::vector<std::int64_t> out;
    for (std::int64_t n : memory_counts(g))
        if (n >= row && n <= kLargestClassElements) out.push_back(n / row * row);
    return out;
}

}  // namespace

void run_memory_classes(GroupEnv& g) {
    Slot& slot = g.ctx.first();
    const std::uint64_t seed = g.opts.seed;
    const cudaStream_t st = slot.stream;
    unsigned long long* counter = slot.counter->ptr();
    const std::int64_t d = g.shapes.dims.d_model, vocab = g.shapes.dims.vocab;

    MemoryKernelSpec cast{"cast_bf16_to_fp32", "sweep", "bf16->fp32", kCastBytesPerElement, 6};
    cast.setup = [&](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
        const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
        const bf16_bits* in = add_bf16_source(bufs, slot, total, seed);
        bufs.emplace_back(slot.device, 4 * total);
        float* out = bufs.back().as<float>();
        return MemoryActions{[=](int j) { cast_bf16_to_f32(out + j * un, in + j * un, un, st); },
                             [=] { poison(out, 4 * un, st); },
                             [=] { check_cast(out, un, stream_seed(seed, kRoleMemSrc, 0), counter, st); }};
    };
    // Rows of `width` BF16 read from one buffer into another: the permute and the softmax.
    auto rows_setup = [&](std::int64_t width, bool softmax) {
        return [&, width, softmax](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
            const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
            const auto w = static_cast<std::uint64_t>(width), rows = un / w;
            const bf16_bits* in = add_bf16_source(bufs, slot, total, seed);
            bufs.emplace_back(slot.device, 2 * total);
            bf16_bits* out = bufs.back().as<bf16_bits>();
            return MemoryActions{[=](int j) {
                                     if (softmax)
                                         softmax_rows_bf16(out + j * un, in + j * un, rows, w, st);
                                     else
                                         permute_rows_bf16(out + j * un, in + j * un, rows, w, st);
                                 },
                                 [=] { poison(out, 2 * un, st); },
                                 [=] {
                                     if (softmax)
                                         check_softmax_rows(out, rows, w, stream_seed(seed, kRoleMemSrc, 0), counter,
                                                            st);
                                     else
                                         check_permute(out, rows, w, stream_seed(seed, kRoleMemSrc, 0), counter, st);
                                 }};
        };
    };
    MemoryKernelSpec permute{"permute_rows_bf16", "sweep", "bf16", kPermuteBytesPerElement, 4};
    permute.setup = rows_setup(d, false);
    permute.extra.set("row_elements", d);
    MemoryKernelSpec softmax{"softmax_rows_bf16", "sweep", "bf16", kSoftmaxBytesPerElement, 4};
    softmax.setup = rows_setup(vocab, true);
    softmax.extra.set("row_elements", vocab);

    // One MoE block's parameters as one rank of the distributed optimizer holds them.
    const std::int64_t ranks = g.shapes.assumed_group_size;
    std::vector<TensorChunk> chunks;
    std::uint64_t offset = 0;
    std::int64_t tensors = 0;
    for (const std::int64_t numel : block_parameters(g.shapes.dims, true)) {
        const std::int64_t shard = numel >= kMinShardedNumel && numel % ranks == 0 ? numel / ranks : numel;
        for (std::uint64_t at = 0; at < static_cast<std::uint64_t>(shard); at += kChunkElements)
            chunks.push_back(
                {offset + at, std::min<std::uint64_t>(kChunkElements, static_cast<std::uint64_t>(shard) - at)});
        offset += static_cast<std::uint64_t>(shard);
        ++tensors;
    }
    const AdamWHyper hyper = adamw_at_step(10);
    const float v_scale = 0.01f;
    MemoryKernelSpec multi{"adamw_fp32_multi_tensor", "moe_block_shards", "fp32", kAdamWBytesPerElement, 16};
    multi.extra.set("tensors", tensors);
    multi.extra.set("chunks", static_cast<std::int64_t>(chunks.size()));
    multi.extra.set("chunk_elements", static_cast<std::int64_t>(kChunkElements));
    multi.extra.set("shard_ranks", ranks);
    multi.setup = [&](std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs) {
        const auto un = static_cast<std::uint64_t>(n), total = un * static_cast<std::uint64_t>(copies);
        for (int a = 0; a < 4; ++a) bufs.emplace_back(slot.device, 4 * total);
        bufs.emplace_back(slot.device, chunks.size() * sizeof(TensorChunk));
        CAL_CUDA(cudaMemcpyAsync(bufs[4].get(), chunks.data(), chunks.size() * sizeof(TensorChunk),
                                 cudaMemcpyHostToDevice, st));
        fill_f32(bufs[1].as<float>(), total, stream_seed(seed, kRoleAdamG, 0), 0, st);
        float *p = bufs[0].as<float>(), *grad = bufs[1].as<float>(), *m = bufs[2].as<float>(), *v = bufs[3].as<float>();
        const auto* table = bufs[4].as<TensorChunk>();
        const std::uint64_t count = chunks.size();
        CAL_CUDA(cudaStreamSynchronize(st));  // the chunk table's host copy may go
        return MemoryActions{[=](int j) {
                                 adamw_f32_chunks(p + j * un, grad + j * un, m + j * un, v + j * un, table, count,
                                                  hyper, st);
                             },
                             [=] { reset_adamw_state(p, m, v, total, seed, v_scale, st); },
                             [=] { check_adamw_state(p, m, v, un, seed, v_scale, hyper, counter, st); }};
    };
    for (const auto* k : {&cast, &permute, &softmax}) {
        sweep_memory_kernel(g, *k, k == &cast ? whole_rows(g, 1) : whole_rows(g, k == &permute ? d : vocab));
    }
    sweep_memory_kernel(g, multi, {static_cast<std::int64_t>(offset)});
}

}  // namespace moesim::cal
