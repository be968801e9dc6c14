// Strict reader of moesim-measurements/1 (see measurements.hpp). The keys each kind may carry
// follow calibrate/harness/README.md ("Output") plus the importer's `source` and `algorithm`.
#include "calibrate/fit/measurements.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "calibrate/fit/measurement_keys.hpp"
#include "models/common/cost_types.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/common/registry.hpp"

namespace moesim::fit {

namespace {

using namespace keys;

// A non-empty array of finite, positive times in microseconds.
std::vector<double> times(const JsonReader& r, const nlohmann::json& raw, const char* key, bool allow_empty) {
  if (!r.has(key)) r.fail(key, "required field is missing");
  const auto& v = raw.at(key);
  if (!v.is_array()) r.fail(key, "expected an array of times in microseconds, got " + brief(v));
  if (v.empty() && !allow_empty) r.fail(key, "is empty: a measurement needs at least one time");
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!v[i].is_number()) r.fail(at, "expected a time in microseconds, got " + brief(v[i]));
    const double t = v[i].get<double>();
    if (!std::isfinite(t)) r.fail(at, "time is not finite");
    if (t <= 0) r.fail(at, "time " + brief(v[i]) + " must be positive");
    out.push_back(t);
  }
  return out;
}

// GEMM dimensions; grouped GEMM marks its routed dimension with "rows" (returned as 0).
std::int64_t dim(const JsonReader& r, const nlohmann::json& raw, const char* key, bool rows_allowed) {
  if (rows_allowed && raw.contains(key) && raw.at(key) == "rows") {
    r.has(key);  // marks the key as read
    return 0;
  }
  return r.integer(key, Range::positive());
}

std::string kind_family(const std::string& kind) {
  if (is_memory_kind(kind)) return "memory";
  return kind == "all_reduce" ? "" : kind;
}

// One kernel of a sequence record: its shape as the GEMM and memory records give it, and its time alone.
SequenceKernel parse_sequence_kernel(const JsonReader& r, const nlohmann::json& raw) {
  SequenceKernel k;
  k.name = r.string("name");
  k.phase = r.choice("phase", {"forward", "backward", "grad_accumulate"});
  k.op = r.string("op");
  const bool grouped = k.op == "grouped_gemm";
  if (k.op == "gemm" || grouped) {
    k.m = dim(r, raw, "m", grouped);
    k.n = dim(r, raw, "n", false);
    k.k = dim(r, raw, "k", grouped);
    k.layout = r.choice("layout", {"fwd", "dgrad", "wgrad"});
    if (grouped && (k.m == 0) == (k.k == 0))
      r.fail("m", "exactly one of m and k must be \"rows\" (the routed dimension)");
    info(r, raw, "rows_dim", T::string);
    k.method = r.string_or("method", "");
    for (const char* key : {"tflops", "check_rel_error"}) info(r, raw, key, T::number_or_null);
  } else if (is_memory_kind(k.op)) {
    k.bytes = r.integer("bytes", Range::positive());
    r.string("dtype");
    r.integer("elements", Range::positive());
    info(r, raw, "GBps", T::number_or_null);
  } else {
    r.fail("op", "unknown kernel op \"" + k.op + "\"; known: gemm, grouped_gemm and the memory kinds");
  }
  info(r, raw, "flops", T::number);
  info(r, raw, "iters", T::integer);
  for (const char* key : {"p10_us", "p90_us"}) info(r, raw, key, T::number_or_null);
  if (r.has("median_us") && !raw.at("median_us").is_null()) k.median_us = r.number("median_us", Range::positive());
  r.finish();
  return k;
}

Measurement parse_record(const JsonReader& r, const nlohmann::json& raw) {
  Measurement m;
  m.path = r.path();
  m.kind = r.string("kind");
  const auto& kinds = measurement_kinds();
  if (std::find(kinds.begin(), kinds.end(), m.kind) == kinds.end()) {
    try {  // an alias the cost model's collective names accept: "alltoall" (nccl-tests) is all_to_all
      m.kind = std::string(name_of(parse_collective_kind(m.kind)));
    } catch (const UnknownNameError&) {}
  }
  if (std::find(kinds.begin(), kinds.end(), m.kind) == kinds.end()) {
    std::string list;
    for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
    r.fail("kind", "unknown measurement kind \"" + m.kind + "\"; known: " + list);
  }
  m.group = r.string("group");
  m.label = r.string("label");
  m.dtype = r.choice("dtype", {"fp32", "bf16", "fp16", "fp64", "fp8_e4m3", "fp8_e5m2", "int8", "uint8", "int32",
                               "uint32", "int64", "uint64", "bf16->fp32"});
  m.group_size = static_cast<int>(r.integer("group_size", Range::between(1, 1e6)));
  m.check = r.choice("check", {"ok", "failed", "skipped"});
  m.nodes = static_cast<int>(r.integer_or("nodes", 0, Range::between(1, 1e6)));
  m.source = r.string_or("source", "");
  m.algorithm =
      r.choice_or("algorithm", "", {"ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat"});
  for (const auto& [key, type] : common_optional_keys()) info(r, raw, key, type);
  if (auto it = kind_extra_keys().find(kind_family(m.kind)); it != kind_extra_keys().end()) {
    for (const auto& [key, type] : it->second) info(r, raw, key, type);
  }
  if (m.kind == "interference" || m.kind == "interference_comm") {
    const bool comm_side = m.kind == "interference_comm";
    // The communication side always says how many iterations fell inside the compute window.
    const std::int64_t inside = comm_side ? r.integer("overlapped_iters", Range::non_negative())
                                          : r.integer_or("overlapped_iters", 1, Range::non_negative());
    m.usable = inside > 0;
    m.times_us = times(r, raw, "times_us", !m.usable);
    if (!m.usable && !m.times_us.empty()) r.fail("overlapped_iters", "is 0 but times_us holds times");
    if (comm_side && m.usable && static_cast<std::int64_t>(m.times_us.size()) != inside) {
      r.fail("overlapped_iters",
             "is " + std::to_string(inside) + " but times_us holds " + std::to_string(m.times_us.size()) + " times");
    }
    m.alone_times_us = times(r, raw, "alone_times_us", false);
    m.alone_median_us = median_of(m.alone_times_us);
    m.background = comm_side ? r.choice("background", {"gemm", "grouped_gemm"}) : r.string("background");
    if (comm_side) {
      m.collective = r.choice("collective", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"});
      m.bytes = r.integer("bytes", Range::positive());
    }
  } else {
    // An attention backend that failed its check is recorded without times.
    m.times_us = times(r, raw, "times_us", m.kind == "attention" && m.check == "failed");
  }
  if (!m.times_us.empty()) m.median_us = median_of(m.times_us);
  if (m.kind == "gemm_fp8" || m.kind == "grouped_gemm_fp8") {
    const bool grouped = m.kind == "grouped_gemm_fp8";
    m.reference_times_us = times(r, raw, "bf16_times_us", false);
    m.reference_median_us = median_of(m.reference_times_us);
    m.m = dim(r, raw, "m", grouped);
    m.n = dim(r, raw, "n", false);
    m.k = dim(r, raw, "k", false);
    m.layout = r.choice("layout", {"fwd"});
    if (grouped) {
      if (m.m != 0) r.fail("m", "must be \"rows\": the grouped GEMM's routed dimension");
      m.method = r.string("method");
      m.rows_per_expert = r.integer_list("rows_per_expert", Range::positive());
      if (m.rows_per_expert.empty()) r.fail("rows_per_expert", "is empty: a grouped GEMM needs experts");
    }
  }
  if (m.kind == "attention") {
    m.method = r.string("backend");
    m.direction = r.choice("pass", {"forward", "backward"});
    m.causal = r.boolean("causal");
    m.flops = r.number("flops", Range::positive());
    const auto dim = [&](const char* key) { return std::to_string(r.integer(key, Range::positive())); };
    m.shape = dim("sequences") + " x " + dim("seq_len") + ", " + dim("heads") + "/" + dim("kv_heads") + " x " +
              dim("head_dim");
    m.seq_len = r.integer("seq_len", Range::positive());
  }
  if (m.kind == "sequence") {
    m.block = r.choice("block", {"moe", "dense"});
    if (m.block == "moe") m.rows_per_expert = r.integer_list("rows_per_expert", Range::non_negative());
    const auto kernels = r.object_list("kernels");
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      m.kernels.push_back(parse_sequence_kernel(kernels[i], raw.at("kernels")[i]));
    }
    if (m.kernels.empty()) r.fail("kernels", "is empty: a sequence needs at least one kernel");
  }
  if (is_collective_kind(m.kind) || is_memory_kind(m.kind)) {
    m.bytes = r.integer("bytes", Range::positive());
    if (is_collective_kind(m.kind)) {
      for (const auto& [key, type] : collective_keys()) info(r, raw, key, type);
    }
  }
  if (m.kind == "gemm" || m.kind == "interference" || m.kind == "grouped_gemm") {
    const bool grouped = m.kind == "grouped_gemm";
    m.m = dim(r, raw, "m", grouped);
    m.n = dim(r, raw, "n", false);
    m.k = dim(r, raw, "k", grouped);
    m.layout = r.choice_or("layout", "fwd", {"fwd", "dgrad", "wgrad"});
    if (grouped) {
      if ((m.m == 0) == (m.k == 0)) r.fail("m", "exactly one of m and k must be \"rows\" (the routed dimension)");
      m.method = r.string("method");
      m.rows_per_expert = r.integer_list("rows_per_expert", Range::non_negative());
      if (m.rows_per_expert.empty()) r.fail("rows_per_expert", "is empty: a grouped GEMM needs experts");
      m.zipf_s = r.number_or("zipf_s", 0.0, Range::non_negative());
    }
  }
  r.finish();
  return m;
}

// Within one sweep (same kind, dtype, group size, label, op and algorithm) sizes must increase:
// a size that goes back means two runs were merged or the file was edited.
void check_sweeps(const std::vector<Measurement>& ms, const nlohmann::json& arr, const std::string& file) {
  std::map<std::string, const Measurement*> last;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const Measurement& m = ms[i];
    if (!is_collective_kind(m.kind) && !is_memory_kind(m.kind)) continue;
    const std::string op = arr[i].contains("op") ? arr[i]["op"].dump() : "";
    const std::string key =
        m.kind + "|" + m.dtype + "|" + std::to_string(m.group_size) + "|" + m.label + "|" + op + "|" + m.algorithm;
    auto [it, fresh] = last.emplace(key, &m);
    if (!fresh) {
      if (m.bytes <= it->second->bytes) {
        throw InputError(file, m.path + ".bytes",
                         std::to_string(m.bytes) + " is not larger than the previous point of this sweep (" +
                             it->second->path + ", " + std::to_string(it->second->bytes) +
                             " bytes): sizes within a sweep (kind " + m.kind + ", dtype " + m.dtype + ", group_size " +
                             std::to_string(m.group_size) + ", label \"" + m.label + "\") must increase");
      }
      it->second = &m;
    }
  }
}

}  // namespace

MeasurementEnvironment parse_environment(const JsonReader& e, const nlohmann::json& raw) {
  // The environment is descriptive (driver, library versions, devices): only what provenance
  // needs is checked; other keys are kept as written.
  MeasurementEnvironment env;
  env.raw = raw;
  env.date_utc = e.string("date_utc");
  env.hostname = e.string_or("hostname", "");
  env.gpu_count = static_cast<int>(e.integer_or("gpu_count", 0, Range::non_negative()));
  env.node_count = static_cast<int>(std::max<std::int64_t>(1, e.integer_or("node_count", 1, Range::non_negative())));
  // The harness and the importer write the NCCL version as a string; anything else is not read.
  if (raw.contains("nccl_version") && raw.at("nccl_version").is_string()) {
    env.nccl_version = raw.at("nccl_version").get<std::string>();
  }
  if (raw.contains("device") && !raw.at("device").is_null()) {
    env.device_name = e.object("device").string_or("name", "");
  }
  return env;
}

const std::vector<std::string>& measurement_kinds() {
  static const std::vector<std::string> kinds = {"all_reduce",
                                                 "all_reduce_bucketed",
                                                 "all_gather",
                                                 "reduce_scatter",
                                                 "all_to_all",
                                                 "send_recv",
                                                 "gemm",
                                                 "grouped_gemm",
                                                 "memcpy_d2d",
                                                 "grad_accum_bf16_to_fp32",
                                                 "adamw_fp32",
                                                 "interference",
                                                 "interference_comm",
                                                 "cast_bf16_to_fp32",
                                                 "permute_rows_bf16",
                                                 "softmax_rows_bf16",
                                                 "adamw_fp32_multi_tensor",
                                                 "sequence",
                                                 "attention",
                                                 "gemm_fp8",
                                                 "grouped_gemm_fp8"};
  return kinds;
}

bool is_collective_kind(const std::string& k) {
  return k == "all_reduce" || k == "all_reduce_bucketed" || k == "all_gather" || k == "reduce_scatter" ||
         k == "all_to_all" || k == "send_recv";
}

bool is_memory_kind(const std::string& k) {
  return is_streaming_memory_kind(k) || k == "cast_bf16_to_fp32" || k == "permute_rows_bf16" ||
         k == "softmax_rows_bf16" || k == "adamw_fp32_multi_tensor";
}

bool is_streaming_memory_kind(const std::string& k) {
  return k == "memcpy_d2d" || k == "grad_accum_bf16_to_fp32" || k == "adamw_fp32";
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = 0.5 * static_cast<double>(v.size() - 1);  // calibrate/harness/timing.cpp pct(0.5)
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

MeasurementFile parse_measurements(const nlohmann::json& doc, const std::string& file) {
  const JsonReader top(doc, file, "");
  const std::string schema = top.string("schema");
  if (schema == kSustainedGemmSchema) return parse_sustained_gemm(doc, file);
  if (schema != "moesim-measurements/1") {
    top.fail("schema", "\"" + schema + "\" is not supported; expected \"moesim-measurements/1\" or \"" +
                           std::string(kSustainedGemmSchema) + "\"");
  }
  MeasurementFile out;
  out.file = file;
  out.status = top.choice("status", {"running", "complete", "failed", "interrupted", "no_device"});
  if (top.has("error") && !doc.at("error").is_null()) top.string("error");
  for (const char* meta : {"tool", "shapes", "budget"}) top.optional_object(meta);
  out.environment = parse_environment(top.object("environment"), doc.at("environment"));
  const auto records = top.object_list("measurements");
  for (std::size_t i = 0; i < records.size(); ++i) {
    out.measurements.push_back(parse_record(records[i], doc.at("measurements")[i]));
    if (out.measurements.back().nodes == 0) out.measurements.back().nodes = out.environment.node_count;
  }
  top.finish();
  check_sweeps(out.measurements, doc.at("measurements"), file);
  return out;
}

MeasurementFile read_measurements(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = read_json_file(path);
  } catch (const nlohmann::json::out_of_range& e) {
    // nlohmann reports a number beyond double range (1e999) this way: it would be infinite.
    throw InputError(path, "", std::string("a number is not finite: ") + e.what());
  }
  return parse_measurements(doc, path);
}

}  // namespace moesim::fit
