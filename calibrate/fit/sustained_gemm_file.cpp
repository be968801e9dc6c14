// calibrate/pytorch/sustained_gemm.py's document ("moesim-sustained-gemm/1"): one large BF16 GEMM
// run back to back, timed in windows of about a second, with NVML's SM clock and board power per
// window. Read strictly into one `sustained_gemm` measurement.
#include <limits>

#include "calibrate/fit/measurements.hpp"
#include "models/common/errors.hpp"

namespace moesim::fit {

MeasurementFile parse_sustained_gemm(const nlohmann::json& doc, const std::string& file) {
  const JsonReader top(doc, file, "");
  top.string("schema");
  MeasurementFile out;
  out.file = file;
  out.status = "complete";  // the script writes its document only once the run has finished
  top.optional_object("tool");
  out.environment = parse_environment(top.object("environment"), doc.at("environment"));
  Measurement m;
  m.path = "windows";
  m.kind = "sustained_gemm";
  m.group = "sustained_gemm";
  m.dtype = "bf16";
  m.check = "ok";
  {
    // The summary is the script's own reading of the windows; the fit reads the windows.
    const auto summary = top.object("summary");
    const auto shape = summary.integer_list("shape", Range::between(1, kMaxExactInteger));
    if (shape.size() != 3) summary.fail("shape", "needs [M, N, K], three dimensions");
    m.m = shape[0];
    m.n = shape[1];
    m.k = shape[2];
    const double err = summary.number("check_rel_error", Range::non_negative());
    // The product checked against a float64 reference, held to the PyTorch scripts' BF16 bound
    // (calibrate/pytorch/attention_bench.py MAX_REL_ERROR: BF16 operands land at 1e-3 to 1e-2).
    constexpr double kBf16CheckTolerance = 2e-2;
    if (err > kBf16CheckTolerance) {
      summary.fail("check_rel_error", "the GEMM's result differs from float64 by " + brief(err) +
                                          "; a BF16 product agrees within " + brief(kBf16CheckTolerance));
    }
    for (const char* key : {"first_tenth_median_tflops", "last_quarter_median_tflops", "sustained_over_first"}) {
      summary.number(key, Range::positive());
    }
    summary.integer("windows", Range::at_least(1));
    summary.finish();
  }
  const auto windows = top.object_list("windows");
  if (windows.empty()) top.fail("windows", "needs at least one window");
  double last_t = -std::numeric_limits<double>::infinity();
  for (const auto& w : windows) {
    const double t = w.number("t_s", Range::positive());
    if (!(t > last_t)) w.fail("t_s", "windows must be in time order");
    last_t = t;
    w.integer("gemms", Range::at_least(1));
    m.window_TFLOPs.push_back(w.number("tflops", Range::positive()));
    if (w.has("sm_clock_mhz")) m.window_sm_clock_MHz.push_back(w.number("sm_clock_mhz", Range::positive()));
    if (w.has("power_w")) m.window_power_W.push_back(w.number("power_w", Range::positive()));
    if (w.has("temperature_c")) w.number("temperature_c", Range::between(-50, 150));
    w.finish();
  }
  m.seconds = last_t;
  out.measurements.push_back(std::move(m));
  top.finish();
  return out;
}

}  // namespace moesim::fit
