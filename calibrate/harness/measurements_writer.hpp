// The measurements document (schema moesim-measurements/1, README.md) and helpers that build its
// records. The whole document is rewritten (temp file, then rename) after every group and on
// every exit path, so a crash or a kill loses at most the group in progress.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"
#include "timing.hpp"

namespace moesim::cal {

class MeasurementsWriter {
  public:
    MeasurementsWriter(std::string path, json::Value tool, json::Value environment);
    void add(json::Value record) { measurements_.push_back(std::move(record)); }
    std::size_t count() const { return measurements_.size(); }
    void set_environment(json::Value env) { environment_ = std::move(env); }
    void set_shapes(json::Value shapes) { shapes_ = std::move(shapes); }
    void set_budget(json::Value budget) { budget_ = std::move(budget); }
    void set_status(std::string status, std::string error = "");
    // Writes the document; returns false (and prints why) if the file cannot be written.
    bool flush() const;

  private:
    std::string path_;
    json::Value tool_, environment_, shapes_, budget_;
    std::string status_ = "running", error_;
    std::vector<json::Value> measurements_;
};

// {"kind", "group", "label", "dtype", "group_size"}: the start of every record.
json::Value base_record(const std::string& kind, const std::string& group, const std::string& label,
                        const std::string& dtype, int group_size);

// times_us, iters, warmup, median_us, p10_us, p90_us, mean_us, min_us, max_us.
void add_timing(json::Value& rec, const TimedRun& r);

// The interference group's comparison, both sides: alone_times_us, alone_median_us, alone_p10_us,
// alone_p90_us, and slowdown = median beside / median alone (null when nothing overlapped).
void add_alone_and_slowdown(json::Value& rec, const TimedRun& alone, const TimedRun& beside);

// bytes, algbw_GBps = bytes / median time, busbw_GBps = algbw * bus_factor (nccl-tests).
void add_bandwidth(json::Value& rec, std::int64_t bytes, double bus_factor, const TimedRun& r);

// "ok" / "failed" plus check_mismatches.
void add_check(json::Value& rec, std::uint64_t mismatches);

// nccl-tests' bus-bandwidth factors for n ranks.
double busbw_factor_allreduce(int n);
double busbw_factor_gather(int n);  // all_gather, reduce_scatter, alltoall

}  // namespace moesim::cal
