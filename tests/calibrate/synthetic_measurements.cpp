#include "tests/calibrate/synthetic_measurements.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace moesim::test {

namespace {

struct Gen {
  const SyntheticTruth& t;
  std::mt19937_64 rng;
  std::normal_distribution<double> z{0.0, 1.0};

  std::vector<double> times(double true_us) {
    std::vector<double> v;
    for (int i = 0; i < t.iters; ++i) v.push_back(true_us * std::exp(t.noise * z(rng)));
    return v;
  }
};

nlohmann::json environment(int gpus, int nodes) {
  return {{"hostname", "synthetic"},
          {"date_utc", "2000-01-01T00:00:00Z"},
          {"gpu_count", gpus},
          {"node_count", nodes},
          {"device", {{"index", 0}, {"name", "NVIDIA B300 SXM (SYNTHETIC test data)"}}}};
}

nlohmann::json document(nlohmann::json env, nlohmann::json measurements) {
  return {{"schema", "moesim-measurements/1"},
          {"tool", {{"name", "synthetic test generator"}}},
          {"status", "complete"},
          {"error", nullptr},
          {"environment", std::move(env)},
          {"shapes", nlohmann::json::object()},
          {"budget", nlohmann::json::object()},
          {"measurements", std::move(measurements)}};
}

nlohmann::json record(const std::string& kind, const std::string& label, const std::string& dtype, int n,
                      std::vector<double> times) {
  return {{"kind", kind},          {"group", "synthetic"}, {"label", label},    {"dtype", dtype}, {"group_size", n},
          {"iters", times.size()}, {"warmup", 2},          {"times_us", times}, {"check", "ok"}};
}

// nccl-tests busbw factor: 2(n-1)/n for all_reduce, (n-1)/n for the gathers and all_to_all.
double factor(const std::string& kind, int n) { return (kind == "all_reduce" ? 2.0 : 1.0) * (n - 1) / n; }

void sweep(Gen& g, nlohmann::json& out, const std::string& kind, int n, double intercept_us, double busbw_GBps) {
  const double algbw = busbw_GBps / factor(kind, n);
  for (double s = 1024; s <= 4.0 * (1 << 30); s *= 2) {
    auto r = record(kind, kind == "all_to_all" ? "uniform" : "sweep", kind == "all_gather" ? "bf16" : "fp32", n,
                    g.times(intercept_us + s / (algbw * 1e3)));
    r["bytes"] = static_cast<std::int64_t>(s);
    r["count"] = static_cast<std::int64_t>(s / 4);
    out.push_back(r);
  }
}

double dense_rate(const SyntheticTruth& t, double m) {  // step table; only table M values are asked
  auto it = t.gemm_TFLOPs.upper_bound(m);
  return std::prev(it)->second;
}

// The harness's interference_comm records: each collective alone at its sweep's rate, and beside
// each background kernel 1 + slowdown times as long.
void comm_side_interference(Gen& g, nlohmann::json& out, int n) {
  const SyntheticTruth& t = g.t;
  for (double bytes = 64.0 * (1 << 20); bytes <= 4.0 * (1 << 30); bytes *= 4) {
    for (const auto& [key, slow] : t.comm_slowdown) {
      const std::string kind = key.substr(0, key.find(' ')), dtype = key.substr(key.find(' ') + 1);
      const int steps = kind == "all_reduce" ? 2 * (n - 1) : kind == "all_to_all" ? 1 : n - 1;
      const double base = kind == "all_to_all" ? t.p2p_base_us : t.ring_base_us;
      const double algbw = t.efficiency.at(kind) * t.nvlink_GBps / factor(kind, n);
      const double alone_us = base + steps * t.hop_us + bytes / (algbw * 1e3);
      for (const char* bg : {"gemm", "grouped_gemm"}) {
        auto rec = record("interference_comm", kind + "+" + bg, dtype, n, g.times(alone_us * (1 + slow)));
        rec.update({{"collective", kind},
                    {"bytes", static_cast<std::int64_t>(bytes)},
                    {"background", bg},
                    {"overlapped_iters", t.iters},
                    {"alone_times_us", g.times(alone_us)}});
        out.push_back(rec);
      }
    }
  }
}

}  // namespace

nlohmann::json synthetic_node_measurements(const SyntheticTruth& t, std::uint64_t seed) {
  Gen g{t, std::mt19937_64(seed)};
  nlohmann::json ms = nlohmann::json::array();
  const int n = 8;
  for (const auto& [kind, eff] : t.efficiency) {
    const int steps = kind == "all_reduce" ? 2 * (n - 1) : kind == "all_to_all" ? 1 : n - 1;
    const double base = kind == "all_to_all" ? t.p2p_base_us : t.ring_base_us;
    sweep(g, ms, kind, n, base + steps * t.hop_us, eff * t.nvlink_GBps);
  }
  for (const auto& [m, rate] : t.gemm_TFLOPs) {
    for (double nk : {2048.0, 4096.0, 8192.0}) {
      const double r = nk < 4096 ? 0.8 * rate : rate;
      auto rec = record("gemm", "grid", "bf16", 1, g.times(2 * m * nk * nk / (r * 1e6)));
      rec.update({{"m", m}, {"n", nk}, {"k", nk}, {"layout", "fwd"}, {"name", "grid"}});
      ms.push_back(rec);
      // The backward passes of the large shapes: the forward rate at M times the pass ratio.
      if (m < 4096 || nk < 4096) continue;
      for (const auto& [layout, ratio] : {std::pair{"dgrad", t.dense_dgrad_ratio}, {"wgrad", t.dense_wgrad_ratio}}) {
        auto pass = record("gemm", layout, "bf16", 1, g.times(2 * m * nk * nk / (r * ratio * 1e6)));
        pass.update({{"m", m}, {"n", nk}, {"k", nk}, {"layout", layout}, {"name", layout}});
        ms.push_back(pass);
      }
    }
  }
  const double total = 65536, n_dim = 4096, k_dim = 4096;
  for (const auto& [x, eff] : t.grouped_efficiency) {
    const int experts = static_cast<int>(total / x);
    for (const auto& [method, scale, layout, pass] : {std::tuple{"grouped", 1.0, "fwd", 1.0},
                                                      {"per_expert_streams", 0.8, "fwd", 1.0},
                                                      {"grouped", 1.0, "dgrad", t.grouped_dgrad_ratio.at(x)},
                                                      {"grouped", 1.0, "wgrad", t.grouped_wgrad_ratio.at(x)}}) {
      const double rate = scale * eff * pass * dense_rate(t, total);
      const bool wgrad = std::string(layout) == "wgrad";  // the routed rows are K there
      auto rec = record("grouped_gemm", "expert_up", "bf16", 1, g.times(2 * total * n_dim * k_dim / (rate * 1e6)));
      rec.update({{"method", method},
                  {"layout", layout},
                  {"rows_dim", wgrad ? "k" : "m"},
                  {"m", wgrad ? nlohmann::json(n_dim) : nlohmann::json("rows")},
                  {"n", n_dim},
                  {"k", wgrad ? nlohmann::json("rows") : nlohmann::json(k_dim)},
                  {"tokens", 16384},
                  {"experts", experts},
                  {"top_k", 4},
                  {"zipf_s", 0.0},
                  {"rows_per_expert", std::vector<std::int64_t>(experts, static_cast<std::int64_t>(x))}});
      ms.push_back(rec);
    }
  }
  for (const auto& [kind, share, dtype] : {std::tuple{"memcpy_d2d", 1.0, "bf16"},
                                           {"grad_accum_bf16_to_fp32", t.accum_fraction, "bf16->fp32"},
                                           {"adamw_fp32", t.adamw_fraction, "fp32"},
                                           {"cast_bf16_to_fp32", t.cast_fraction, "bf16->fp32"},
                                           {"permute_rows_bf16", t.permute_fraction, "bf16"},
                                           {"softmax_rows_bf16", t.softmax_fraction, "bf16"},
                                           {"adamw_fp32_multi_tensor", t.multi_tensor_fraction, "fp32"}}) {
    for (double bytes = 1 << 20; bytes <= 4.0 * (1 << 30); bytes *= 4) {
      auto rec = record(kind, "sweep", dtype, 1, g.times(t.launch_us + bytes / (share * t.hbm_GBps * 1e3)));
      rec["bytes"] = static_cast<std::int64_t>(bytes);
      ms.push_back(rec);
    }
  }
  for (const auto& [bg, slow] :
       {std::pair{"all_reduce", t.slowdown_all_reduce}, std::pair{"all_to_all", t.slowdown_all_to_all}}) {
    const double alone = 2.0 * 16384 * 4096 * 4096 / (1400 * 1e6);
    auto rec = record("interference", std::string("gemm+") + bg, "bf16", n, g.times(alone * (1 + slow)));
    rec.update({{"m", 16384},
                {"n", 4096},
                {"k", 4096},
                {"layout", "fwd"},
                {"background", bg},
                {"overlapped_iters", t.iters},
                {"alone_times_us", g.times(alone)}});
    ms.push_back(rec);
  }
  comm_side_interference(g, ms, n);
  return document(environment(n, 1), ms);
}

nlohmann::json synthetic_two_node_measurements(const SyntheticTruth& t, std::uint64_t seed) {
  Gen g{t, std::mt19937_64(seed)};
  nlohmann::json ms = nlohmann::json::array();
  const int n = 16, m = 2, r = 8;
  // Ring across domains (models/costs/collective_algorithms.cpp): latency = base + (steps - inter)
  // x NVLink hop + inter x network hop; NIC-bound busbw = r x line rate x NIC efficiency.
  const int steps = 2 * (n - 1), inter = 2 * (m - 1);
  sweep(g, ms, "all_reduce", n, t.ring_base_us + (steps - inter) * t.hop_us + inter * t.net_hop_us,
        r * t.nic_line_GBps * t.nic_efficiency);
  return document(environment(n, m), ms);
}

}  // namespace moesim::test
