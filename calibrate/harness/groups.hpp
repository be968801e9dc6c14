// The measurement groups and what they share: the context, options, budget, timer, output and
// shapes. Each group records only on the root process and prints its own progress table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "budget.hpp"
#include "cli.hpp"
#include "context.hpp"
#include "measurements_writer.hpp"
#include "shapes.hpp"
#include "timing.hpp"

namespace moesim::cal {

struct GroupEnv {
    Context& ctx;
    const Options& opts;
    Budget& budget;
    PointTimer& timer;
    MeasurementsWriter& out;
    const Shapes& shapes;
    std::string group;  // name of the group being run
};

void run_allreduce(GroupEnv& g);
void run_bucketed(GroupEnv& g);
void run_allgather(GroupEnv& g);
void run_reducescatter(GroupEnv& g);
void run_alltoall(GroupEnv& g);
void run_sendrecv(GroupEnv& g);
void run_gemm(GroupEnv& g);
void run_grouped_gemm(GroupEnv& g);
void run_memory(GroupEnv& g);
void run_interference(GroupEnv& g);
void run_interference_comm(GroupEnv& g);  // the collective side, after run_interference
void run_sequence(GroupEnv& g);

// Runs the group called `name` (one of all_group_names()).
void run_group(const std::string& name, GroupEnv& g);

// Largest bytes of one buffer such that `buffers` of them fit on every GPU (85% of free memory
// less 1 GiB of headroom for NCCL and cuBLAS), further capped by --max-bytes.
std::int64_t buffer_cap(GroupEnv& g, double buffers);

// Records and prints a skipped point.
void skip_point(GroupEnv& g, const std::string& what, const std::string& reason);

// Adds a record on the root process.
void emit(GroupEnv& g, json::Value rec);

// One correctness run: reset counters, poison outputs, enqueue once, run the per-slot checks,
// and return the total mismatches over all GPUs and processes.
std::uint64_t checked_run(GroupEnv& g, const std::function<void(Slot&)>& poison_outputs,
                          const std::function<void()>& enqueue, const std::function<void(Slot&)>& check_outputs);

// "1.0 GiB" style text for progress lines.
std::string human_bytes(double bytes);

// Sizes lo, lo*factor, ... <= hi.
std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t hi, std::int64_t factor);

// --- One measured collective point: budget check, correctness run, timed run, record and
// table row. Shared by the all-reduce, all-gather, reduce-scatter, all-to-all and send/recv groups.
struct CollectivePoint {
    CollectivePoint(std::string kind_, std::string label_, std::string dtype_, std::string redop_, std::int64_t bytes_,
                    std::int64_t count_, double bus_factor_)
        : kind(std::move(kind_)),
          label(std::move(label_)),
          dtype(std::move(dtype_)),
          redop(std::move(redop_)),
          bytes(bytes_),
          count(count_),
          bus_factor(bus_factor_) {}
    std::string kind;         // all_reduce, all_reduce_bucketed, all_gather, reduce_scatter, ...
    std::string label;        // sweep, bucket_sequence, coalesced_flat, fsdp_unit:block3, ...
    std::string dtype;        // fp32, bf16
    std::string redop;        // sum, avg, or "" for data movement
    std::int64_t bytes = 0;   // nccl-tests convention for the kind
    std::int64_t count = 0;   // elements
    double bus_factor = 1.0;  // busbw = algbw * bus_factor
    std::function<void()> enqueue;
    std::function<void(Slot&)> poison;  // empty: no correctness run
    std::function<void(Slot&)> check;
    json::Value extra = json::Value::object();  // fields appended to the record
};

// Measures the point unless the budget cannot afford est_iter_s per iteration; returns whether
// it was measured. est_iter_s = 0: unknown.
bool measure_collective(GroupEnv& g, CollectivePoint& p, double est_iter_s);

// Skips the remaining sizes of a sweep in one entry.
void skip_rest(GroupEnv& g, const std::string& kind, const std::vector<std::int64_t>& sizes, std::size_t from,
               const std::string& reason);

// The last point a size sweep measured, which estimates the time of a larger one.
struct SweepEstimate {
    double last_s = 0, last_bytes = 0;
    double at(std::int64_t bytes) const { return extrapolate_s(last_s, last_bytes, static_cast<double>(bytes)); }
};

// A size sweep under the time budget: point(bytes, estimated iteration seconds) for the first
// `count` sizes in order, each estimate extrapolated from the point before; at the first point
// the budget refuses (point returns false), the sizes after it are skipped as `kind`. Returns the
// last measured point, for the points measured after the sweep.
SweepEstimate sweep_sizes(GroupEnv& g, const std::string& kind, const std::vector<std::int64_t>& sizes,
                          std::size_t count, const std::function<bool(std::int64_t bytes, double est_s)>& point);

// ncclGroupStart, body(slot) for every local slot, ncclGroupEnd.
void nccl_group(Context& ctx, const std::function<void(Slot&)>& body);

}  // namespace moesim::cal
