// One memory-bound kernel measured over a sweep of sizes on the first GPU: per size, the buffers
// (several copies while one would sit in L2), one checked application, the timed run and the
// record. Shared by the memory group's streaming kernels (memory_bench.cpp) and its kernel
// classes (memory_class_bench.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "groups.hpp"

namespace moesim::cal {

// What one size needs: launch(j) runs one iteration on buffer copy j; prepare() resets the inputs
// of copy 0 before the checked application; verify() checks copy 0 into the slot's counter.
struct MemoryActions {
    std::function<void(int)> launch;
    std::function<void()> prepare, verify;
};

struct MemoryKernelSpec {
    MemoryKernelSpec(std::string kind_, std::string label_, std::string dtype_, double bytes_per_element_,
                     std::int64_t arrays_bytes_per_element_)
        : kind(std::move(kind_)),
          label(std::move(label_)),
          dtype(std::move(dtype_)),
          bytes_per_element(bytes_per_element_),
          arrays_bytes_per_element(arrays_bytes_per_element_) {}
    std::string kind, label, dtype;
    double bytes_per_element = 0;               // read + written per element per iteration
    std::int64_t arrays_bytes_per_element = 0;  // resident per element, all arrays of one copy
    // Allocates into `bufs` for `copies` copies of n elements and fills what stays constant.
    std::function<MemoryActions(std::int64_t n, int copies, std::vector<DeviceBuffer>& bufs)> setup;
    json::Value extra = json::Value::object();  // fields added to every record
};

// Adds a BF16 buffer of `total` elements holding the stream kRoleMemSrc (the inputs of the copy,
// cast, gather and softmax) to `bufs`, and returns it.
const bf16_bits* add_bf16_source(std::vector<DeviceBuffer>& bufs, const Slot& slot, std::uint64_t total,
                                 std::uint64_t seed);

// Measures `spec` at each element count in order; a size over the free-memory cap or the time
// budget ends the sweep (recorded as skipped).
void sweep_memory_kernel(GroupEnv& g, const MemoryKernelSpec& spec, const std::vector<std::int64_t>& counts);

// The memory group's element counts: 256 Ki to 1 Gi by x4 (16 Mi with --quick).
std::vector<std::int64_t> memory_counts(const GroupEnv& g);

// The kernel classes beyond the streaming kernels: cast, permute, row softmax, multi-tensor AdamW.
void run_memory_classes(GroupEnv& g);

}  // namespace moesim::cal
