// Writing the measurements document (see measurements_writer.hpp).
#include "measurements_writer.hpp"

#include <cstdio>
#include <fstream>

namespace moesim::cal {

MeasurementsWriter::MeasurementsWriter(std::string path, json::Value tool, json::Value environment)
    : path_(std::move(path)), tool_(std::move(tool)), environment_(std::move(environment)) {}

void MeasurementsWriter::set_status(std::string status, std::string error) {
    status_ = std::move(status);
    error_ = std::move(error);
}

bool MeasurementsWriter::flush() const {
    json::Value doc = json::Value::object();
    doc.set("schema", "moesim-measurements/1");
    doc.set("tool", tool_);
    doc.set("status", status_);
    doc.set("error", error_.empty() ? json::Value() : json::Value(error_));
    doc.set("environment", environment_);
    doc.set("shapes", shapes_.is_null() ? json::Value::object() : shapes_);
    doc.set("budget", budget_.is_null() ? json::Value::object() : budget_);
    json::Value arr = json::Value::array();
    for (const auto& m : measurements_) arr.push_back(m);
    doc.set("measurements", arr);
    const std::string tmp = path_ + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            std::fprintf(stderr, "moesim-calibrate: cannot write %s\n", tmp.c_str());
            return false;
        }
        out << json::dump(doc);
        if (!out.good()) {
            std::fprintf(stderr, "moesim-calibrate: write to %s failed\n", tmp.c_str());
            return false;
        }
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
        std::fprintf(stderr, "moesim-calibrate: cannot rename %s to %s\n", tmp.c_str(), path_.c_str());
        return false;
    }
    return true;
}

json::Value base_record(const std::string& kind, const std::string& group, const std::string& label,
                        const std::string& dtype, int group_size) {
    json::Value r = json::Value::object();
    r.set("kind", kind);
    r.set("group", group);
    r.set("label", label);
    r.set("dtype", dtype);
    r.set("group_size", group_size);
    return r;
}

void add_timing(json::Value& rec, const TimedRun& r) {
    rec.set("iters", r.iters);
    rec.set("warmup", r.warmup);
    rec.set("times_us", json::Value::array_of(r.times_us));
    rec.set("median_us", r.stats.median);
    rec.set("p10_us", r.stats.p10);
    rec.set("p90_us", r.stats.p90);
    rec.set("mean_us", r.stats.mean);
    rec.set("min_us", r.stats.min);
    rec.set("max_us", r.stats.max);
}

void add_alone_and_slowdown(json::Value& rec, const TimedRun& alone, const TimedRun& beside) {
    rec.set("alone_times_us", json::Value::array_of(alone.times_us));
    rec.set("alone_median_us", alone.stats.median);
    rec.set("alone_p10_us", alone.stats.p10);
    rec.set("alone_p90_us", alone.stats.p90);
    rec.set("slowdown", beside.iters && alone.stats.median > 0 ? json::Value(beside.stats.median / alone.stats.median)
                                                               : json::Value());
}

void add_bandwidth(json::Value& rec, std::int64_t bytes, double bus_factor, const TimedRun& r) {
    rec.set("bytes", bytes);
    const double algbw = r.stats.median > 0 ? static_cast<double>(bytes) / (r.stats.median * 1e3) : 0.0;
    rec.set("algbw_GBps", algbw);
    rec.set("busbw_GBps", algbw * bus_factor);
}

void add_check(json::Value& rec, std::uint64_t mismatches) {
    rec.set("check", mismatches == 0 ? "ok" : "failed");
    rec.set("check_mismatches", mismatches);
}

// nccl-tests PERFORMANCE.md: all_reduce moves 2(n-1)/n of the buffer per rank over the bus;
// all_gather, reduce_scatter and alltoall move (n-1)/n of the total buffer.
double busbw_factor_allreduce(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }
double busbw_factor_gather(int n) { return n > 0 ? static_cast<double>(n - 1) / n : 0.0; }

}  // namespace moesim::cal
