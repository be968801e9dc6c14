#include "calibrate/fit/fit_check.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "models/common/errors.hpp"
#include "models/costs/collective_model.hpp"

namespace moesim::fit {

GpuIdentity gpu_identity(const std::string& name) {
  GpuIdentity id;
  std::string token;
  auto take = [&]() {
    if (token.empty()) return;
    if (token == "PCIE" || token == "NVL") id.variants.insert(token);
    const bool digit = std::any_of(token.begin(), token.end(), [](unsigned char c) { return std::isdigit(c); });
    if (id.code.empty() && digit) id.code = token;
    token.clear();
  };
  for (const char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      token += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else {
      take();  // spaces, '-', '(' ... separate tokens ("A100-SXM4-80GB")
    }
  }
  take();
  return id;
}

bool same_gpu(const std::string& measured, const std::string& profile_model) {
  const GpuIdentity a = gpu_identity(measured), b = gpu_identity(profile_model);
  return !a.code.empty() && a.code == b.code && a.variants == b.variants;
}

void check_devices(const FitInputs& in, const std::string& base_file, std::vector<std::string>& warnings) {
  const std::string& model = in.base.gpu.model;
  for (const auto& f : in.files) {
    const std::string& device = f.environment.device_name;
    if (device.empty()) {
      warnings.push_back(f.file + " names no device: not checked against " + base_file + "'s GPU \"" + model + "\"");
      continue;
    }
    if (same_gpu(device, model)) continue;
    const std::string what = "measured on \"" + device + "\" (" + gpu_identity(device).code + "), but --base " +
                             base_file + " describes \"" + model + "\" (" + gpu_identity(model).code + ")";
    if (!in.options.force_device) {
      throw InputError(f.file, "environment.device.name",
                       what + ": fit a base profile of the same GPU, or pass --force-device to fit it anyway");
    }
    warnings.push_back(f.file + " was " + what + "; fitted anyway (--force-device)");
  }
}

void check_against_cost_model(const HardwareProfile& fitted, std::vector<CurveReport>& curves,
                              std::vector<std::string>& warnings) {
  // The fitted values carry 4 significant digits and the latencies are medians over curves, so a
  // gap of a percent or two is rounding; beyond it the model runs another algorithm or the field
  // came from another curve (a larger group).
  constexpr double kPickTolerance = 0.02;
  const CollectiveModel& model = collective_models().get(kDefaultCollectiveModel);
  for (auto& c : curves) {
    if (c.kind.empty() || c.field.empty() || c.largest_bytes <= 0) continue;
    CollectiveRequest req;
    req.kind = parse_collective_kind(c.kind);
    req.bytes = c.largest_bytes;
    req.ranks = c.ranks;
    req.ranks_per_node = c.ranks % c.domains == 0 ? c.ranks / c.domains : 0;
    try {
      const CollectiveCost cost = model.cost(fitted, req);
      c.model_pick = cost.algorithm;
      c.largest_busbw_model = cost.busbw_GBps;
      req.algorithm = c.algorithm;
      c.largest_busbw_pinned = model.cost(fitted, req).busbw_GBps;
    } catch (const InputError&) {
      continue;  // a group shape the model does not run: nothing to compare
    }
    auto gap = [&](double busbw) { return (busbw - c.largest_busbw_measured) / c.largest_busbw_measured; };
    auto text = [&](const std::string& alg, double busbw) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%+.1f%%", 100 * gap(busbw));
      return alg + " for " + sig4(c.largest_bytes) + " B gives busbw " + sig4(busbw) + " GB/s against " +
             sig4(c.largest_busbw_measured) + " measured (" + pct + ")";
    };
    if (std::fabs(gap(c.largest_busbw_pinned)) > kPickTolerance) {
      warnings.push_back(c.curve + ": on the fitted profile " + text(c.algorithm, c.largest_busbw_pinned) +
                         ": the fitted field was set from another curve or clamped");
    } else if (std::fabs(gap(c.largest_busbw_model)) > kPickTolerance && !c.algorithm_recorded) {
      warnings.push_back(c.curve + ": on the fitted profile the cost model picks " +
                         text(c.model_pick, c.largest_busbw_model) + "; the fit set " + c.algorithm +
                         "'s fields: pin NCCL_ALGO (or pass --all-reduce-algorithm) to fit the one NCCL ran");
    }  // a pinned run the model would not pick by default: --algorithm reproduces it (the table)
  }
}

}  // namespace moesim::fit
