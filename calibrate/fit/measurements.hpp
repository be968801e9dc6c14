// A measurements document ("moesim-measurements/1", written by the CUDA harness in
// calibrate/harness/ and by `moesim import nccl-tests`), read strictly: every problem is an
// InputError naming the file and the JSON path of the offending entry. The schema is documented in
// calibrate/harness/README.md ("Output"); calibrate/README.md lists the importer's extra keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/json_reader.hpp"

namespace moesim::fit {

// Where and on what the numbers were taken: kept for the provenance of every fitted field.
struct MeasurementEnvironment {
  std::string hostname;      // "" when not recorded
  std::string date_utc;      // ISO 8601, or "unknown" (nccl-tests logs carry no date)
  std::string device_name;   // the first device's name; "" when not recorded
  std::string nccl_version;  // "" or "unknown" when not recorded
  int gpu_count = 0;         // ranks in the communicator (0: not recorded)
  int node_count = 1;        // nodes the ranks span
  nlohmann::json raw;        // the whole environment object, as written
};

// One kernel of a `sequence` record (one microbatch through one block, in launch order) and its
// time alone; median_us is 0 when the budget left it untimed.
struct SequenceKernel {
  std::string name, phase, op;       // phase: forward, backward, grad_accumulate; op: gemm, grouped_gemm, memory kinds
  std::int64_t m = 0, n = 0, k = 0;  // GEMMs; 0 = "rows", the routed dimension of a grouped GEMM
  std::string layout;                // fwd, dgrad, wgrad
  std::string method;                // grouped GEMMs: the harness's method (cublasGemmGroupedBatchedEx, ...)
  std::int64_t bytes = 0;            // memory kernels: read + written
  double median_us = 0;
};

struct Measurement {
  std::string path;  // JSON path inside the file, e.g. "measurements[12]"
  std::string kind, group, label, dtype;
  int group_size = 1;
  int nodes = 1;                  // hosts the group spans: the record's "nodes" (importer), else environment.node_count
  std::vector<double> times_us;   // raw per-iteration times (nccl-tests: its one average)
  double median_us = 0;           // recomputed from times_us (linear interpolation, as the harness)
  std::string check = "skipped";  // ok, failed, skipped
  std::string source;             // importer: "LOG:LINE" of the row; "" for harness records
  std::string algorithm;          // importer: NCCL algorithm when the log names it; "" unknown
  // Collectives and memory-bound kernels: bytes (nccl-tests convention / read + written).
  std::int64_t bytes = 0;
  // Dense GEMM and interference: the problem; grouped GEMM: the fixed dimensions (0 = "rows").
  std::int64_t m = 0, n = 0, k = 0;
  std::string layout, method;
  // Grouped GEMM routing.
  std::vector<std::int64_t> rows_per_expert;
  double zipf_s = 0;
  // Interference: the GEMM alone (interference_comm: the collective alone); `usable` is false when no iteration
  // overlapped the background.
  std::vector<double> alone_times_us;
  double alone_median_us = 0;
  std::string background;  // interference: the collective; interference_comm: gemm or grouped_gemm
  bool usable = true;
  // interference_comm: the collective timed (times_us beside the background, alone_times_us alone).
  std::string collective;
  // attention (calibrate/pytorch/attention_bench.py): the pass (forward, backward), whether causal,
  // the FLOPs it counts and the shape as "sequences x seq_len, heads/kv_heads x head_dim";
  // `method` holds the backend.
  std::string direction, shape;
  std::int64_t seq_len = 0;  // tokens per sequence
  // gemm_fp8, grouped_gemm_fp8 (calibrate/pytorch/fp8_gemm_bench.py): the BF16 reference on the same
  // shape, timed beside the FP8 product (times_us).
  std::vector<double> reference_times_us;
  double reference_median_us = 0;
  bool causal = false;
  double flops = 0;
  // sequence: the block ("moe", "dense") and its kernels; rows_per_expert above is the routing.
  std::string block;
  std::vector<SequenceKernel> kernels;
  // sustained_gemm (calibrate/pytorch/sustained_gemm.py): one m x n x k BF16 GEMM back to back,
  // timed in windows of about a second: each window's rate, SM clock and board power (the clock
  // and power empty where NVML was not available).
  std::vector<double> window_TFLOPs, window_sm_clock_MHz, window_power_W;
  double seconds = 0;  // the last window's end
};

struct MeasurementFile {
  std::string file;
  std::string status;  // running, complete, failed, interrupted, no_device
  MeasurementEnvironment environment;
  std::vector<Measurement> measurements;
};

// Kinds a measurement may have (the harness's, and nccl-tests imports use the collective ones).
const std::vector<std::string>& measurement_kinds();
bool is_collective_kind(const std::string& kind);
bool is_memory_kind(const std::string& kind);
// The flat streaming kernels (copy, accumulation, fused AdamW over one buffer): what
// compute.hbm_sustained_GBps is fitted from; the other memory kinds measure the kernel classes.
bool is_streaming_memory_kind(const std::string& kind);

// Median by linear interpolation between order statistics (as calibrate/harness/timing.cpp).
double median_of(std::vector<double> values);

// The environment block every measurement document carries (only what provenance needs is checked).
MeasurementEnvironment parse_environment(const JsonReader& e, const nlohmann::json& raw);

// calibrate/pytorch/sustained_gemm.py's document: one `sustained_gemm` measurement.
inline constexpr std::string_view kSustainedGemmSchema = "moesim-sustained-gemm/1";
MeasurementFile parse_sustained_gemm(const nlohmann::json& doc, const std::string& file);

// A moesim-measurements/1 document, or a sustained-GEMM one (above).
MeasurementFile parse_measurements(const nlohmann::json& doc, const std::string& file);
// Reads and parses `path`; malformed JSON is reported with its line and column.
MeasurementFile read_measurements(const std::string& path);

}  // namespace moesim::fit
