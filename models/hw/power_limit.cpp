#include "models/hw/power_limit.hpp"

#include <cstdio>
#include <string>

#include "models/common/errors.hpp"
#include "models/hw/plausible_ranges.hpp"
#include "models/hw/profile_sections.hpp"

namespace moesim {

namespace {

std::string watts(double w) {
  char text[32];
  std::snprintf(text, sizeof text, "%g W", w);
  return text;
}

// The table's watts are plausible (its rates are checked against the peak with the others).
void check_table(const HardwareProfile& h, const JsonReader& in) {
  const auto& table = h.compute.gemm_TFLOPs_by_power_limit;
  if (!table) return;
  const std::string path = in.object("compute").child_path("gemm_TFLOPs_by_power_limit");
  for (std::size_t i = 0; i < table->points().size(); ++i) {
    const std::string why = profile_detail::implausible(table->points()[i].x, plausible::kBoardPowerW);
    if (!why.empty()) throw InputError(in.file(), path + ".points[" + std::to_string(i) + "].power_limit_W", why);
  }
}

}  // namespace

std::optional<double> read_power_limit_W(const JsonReader& gpu) {
  if (!gpu.has("power_limit_W")) return std::nullopt;
  const double w = gpu.number("power_limit_W", Range::non_negative());
  if (const std::string why = profile_detail::implausible(w, plausible::kBoardPowerW); !why.empty())
    gpu.fail("power_limit_W", why);
  return w;
}

void apply_power_limit(HardwareProfile& h, const JsonReader& in) {
  check_table(h, in);
  if (!h.gpu.power_limit_W) return;
  const JsonReader gpu = in.object("gpu");
  const double limit = *h.gpu.power_limit_W;
  if (!h.gpu.board_power_W) {
    gpu.fail("power_limit_W", "needs gpu.board_power_W, the board's default limit that hardware profile \"" + h.name +
                                  "\"'s rates hold at");
  }
  const double board = h.gpu.board_power_W->value;
  if (limit > board) {
    gpu.fail("power_limit_W", watts(limit) + " exceeds the board's limit (gpu.board_power_W " + watts(board) +
                                  "); allowed: up to " + watts(board));
  }
  if (limit == board) return;
  const auto& table = h.compute.gemm_TFLOPs_by_power_limit;
  if (!table) {
    gpu.fail("power_limit_W", "a limit below the board's " + watts(board) +
                                  " needs compute.gemm_TFLOPs_by_power_limit (a GEMM's rate measured at such "
                                  "limits), which hardware profile \"" +
                                  h.name + "\" does not have; allowed here: " + watts(board));
  }
  const double lowest = table->points().front().x, highest = table->points().back().x;
  if (limit < lowest || board > highest) {
    gpu.fail("power_limit_W", watts(limit) + " is outside the limits compute.gemm_TFLOPs_by_power_limit measures (" +
                                  watts(lowest) + " to " + watts(highest) + "); allowed here: " + watts(lowest) +
                                  " to " + watts(board));
  }
  // Linear in watts between the table's points (the measurements are a few limits apart).
  const double factor = table->linear_at(limit) / table->linear_at(board);
  ComputeSpec& c = h.compute;
  c.gemm_bf16_TFLOPs_by_rows.scale_y(factor);
  if (c.gemm_power_limited_TFLOPs) c.gemm_power_limited_TFLOPs->value *= factor;
  c.attention_fwd_TFLOPs.value *= factor;
  c.attention_bwd_TFLOPs.value *= factor;
  for (auto* t : {&c.attention_fwd_TFLOPs_by_seq_len, &c.attention_bwd_TFLOPs_by_seq_len}) {
    if (*t) (*t)->scale_y(factor);
  }
  for (auto* a : {&c.fp8_attention, &c.mxfp8_attention}) {
    if (!*a) continue;
    (*a)->fwd_TFLOPs_by_seq_len.scale_y(factor);
    (*a)->bwd_TFLOPs_by_seq_len.scale_y(factor);
  }
  for (auto& k : c.attention_by_kernel) {
    k.fwd_TFLOPs.value *= factor;
    k.bwd_TFLOPs.value *= factor;
  }
  h.power_limit = PowerLimit{limit, board, factor, table->source};
}

}  // namespace moesim
