// The attention rates from calibrate/pytorch/attention_bench.py's records: the best backend
// per shape, the median over shapes, per pass; failed backends, non-causal records and an
// implausible rate are kept out.
#include <catch2/catch.hpp>

#include <string>

#include "calibrate/fit/fitter.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kBase = "hardware_profiles/b300-hgx.json";

// One record timed at `tflops` for a causal shape of 16,384 tokens at `seq` (32 / 8 heads of 128).
json attention(const std::string& backend, const std::string& pass, double seq, double tflops, bool causal = true) {
  const double sequences = 16384 / seq;
  const double flops = 4.0 * seq * seq * 0.5 * 32 * 128 * sequences * (pass == "backward" ? 2.5 : 1.0);
  const double us = flops / (tflops * 1e6);
  return {{"kind", "attention"},
          {"group", "attention"},
          {"label", backend},
          {"dtype", "bf16"},
          {"group_size", 1},
          {"iters", 3},
          {"warmup", 1},
          {"times_us", {us, us, us}},
          {"check", "ok"},
          {"pass", pass},
          {"backend", backend},
          {"gqa", "native"},
          {"sequences", static_cast<int>(sequences)},
          {"seq_len", static_cast<int>(seq)},
          {"heads", 32},
          {"kv_heads", 8},
          {"head_dim", 128},
          {"causal", causal},
          {"flops", flops},
          {"check_rel_error", 0.003}};
}

fit::FitResult fit_with(const json& records, test::TempDir& dir) {
  json doc = test::synthetic_node_measurements(test::SyntheticTruth{}, 3);
  for (const auto& r : records) doc["measurements"].push_back(r);
  return fit::fit_profile({dir.write("node.json", doc.dump())}, test::source_path(kBase), {});
}
}  // namespace

TEST_CASE("the attention rates are the best backend's per shape, the median over shapes", "[unit]") {
  test::TempDir dir;
  json records = json::array();
  for (double seq : {2048.0, 4096.0, 8192.0}) {
    records.push_back(attention("flash", "forward", seq, 800));
    records.push_back(attention("cudnn", "forward", seq, seq == 2048 ? 1000 : 1200));
    records.push_back(attention("flash", "backward", seq, 700));
    records.push_back(attention("cudnn", "backward", seq, 900));
  }
  records.push_back(attention("cudnn", "forward", 8192, 4000, false));  // full attention: not what the model prices
  json failed = attention("efficient", "forward", 4096, 5000);
  failed["check"] = "failed";
  failed["times_us"] = json::array();  // a backend that failed its check is not timed
  records.push_back(failed);
  const auto r = fit_with(records, dir);
  const auto& c = r.profile["compute"];
  CHECK(c["attention_fwd_TFLOPs"]["kind"] == "fitted");
  CHECK(c["attention_fwd_TFLOPs"]["value"].get<double>() == Approx(1200).epsilon(1e-3));
  CHECK(c["attention_bwd_TFLOPs"]["value"].get<double>() == Approx(900).epsilon(1e-3));
  const std::string source = c["attention_fwd_TFLOPs"]["source"];
  CHECK(source.find("cudnn at 3 of 3 shapes") != std::string::npos);
  CHECK(source.find("per backend: cudnn 1200, flash 800") != std::string::npos);
  const std::string table = fit::format_fit_table(r);
  INFO(table);
  CHECK(table.find("attention forward (best backend per shape)") != std::string::npos);
  CHECK(table.find("attention backward flash") != std::string::npos);
  // The winner names the rates; the other backend measured in both passes keeps its own, for a
  // stack that calls it (the failed one has none).
  CHECK(c["attention_kernel"] == "cudnn");
  REQUIRE(c.contains("attention_by_kernel"));
  CHECK(c["attention_by_kernel"].size() == 1);
  CHECK(c["attention_by_kernel"]["flash_attn_2"]["fwd_TFLOPs"]["value"].get<double>() == Approx(800).epsilon(1e-3));
  CHECK(c["attention_by_kernel"]["flash_attn_2"]["bwd_TFLOPs"]["value"].get<double>() == Approx(700).epsilon(1e-3));
  CHECK(c["attention_by_kernel"]["flash_attn_2"]["fwd_TFLOPs"]["kind"] == "fitted");
}

TEST_CASE("a refit whose winner the base listed as another kernel moves it out of attention_by_kernel", "[unit]") {
  test::TempDir dir;
  // A base that named FlashAttention-2 its default and listed cuDNN beside it.
  json base = read_json_file(test::source_path(kBase));
  base["compute"]["attention_kernel"] = "flash_attn_2";
  const json q = {{"value", 500}, {"kind", "assumption"}, {"source", "test"}};
  base["compute"]["attention_by_kernel"] = {{"cudnn", {{"fwd_TFLOPs", q}, {"bwd_TFLOPs", q}}}};
  json doc = test::synthetic_node_measurements(test::SyntheticTruth{}, 3);
  for (double seq : {2048.0, 4096.0}) {
    doc["measurements"].push_back(attention("flash", "forward", seq, 800));
    doc["measurements"].push_back(attention("cudnn", "forward", seq, 1200));
    doc["measurements"].push_back(attention("flash", "backward", seq, 700));
    doc["measurements"].push_back(attention("cudnn", "backward", seq, 900));
  }
  const auto r = fit::fit_profile({dir.write("node.json", doc.dump())}, dir.write("base.json", base.dump()), {});
  const auto& c = r.profile["compute"];
  CHECK(c["attention_kernel"] == "cudnn");
  CHECK_FALSE(c["attention_by_kernel"].contains("cudnn"));
  CHECK(c["attention_by_kernel"]["flash_attn_2"]["fwd_TFLOPs"]["value"].get<double>() == Approx(800).epsilon(1e-3));
}

TEST_CASE("an attention rate above the dense peak is not fitted", "[unit]") {
  test::TempDir dir;
  const auto r = fit_with(json::array({attention("cudnn", "forward", 4096, 50000)}), dir);
  CHECK(r.profile["compute"]["attention_fwd_TFLOPs"]["kind"] != "fitted");
  std::string warnings;
  for (const auto& w : r.warnings) warnings += w + "\n";
  CHECK(warnings.find("compute.attention_fwd_TFLOPs") != std::string::npos);
}

TEST_CASE("an attention record without its pass is refused with its path", "[unit]") {
  test::TempDir dir;
  json bad = attention("cudnn", "forward", 4096, 1000);
  bad.erase("pass");
  try {
    fit_with(json::array({bad}), dir);
    FAIL("a record without its pass was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(".pass") != std::string::npos);
  }
}

TEST_CASE("the attention rates by sequence length are the best backend's median at each length", "[unit]") {
  test::TempDir dir;
  json records = json::array();
  // cuDNN wins at every length: 1000 at 2k, 1200 and 1300 at 4k (two shapes), 1250 at 8k.
  for (const auto& [seq, rate] : {std::pair{2048.0, 1000.0}, std::pair{4096.0, 1200.0}, std::pair{8192.0, 1250.0}}) {
    records.push_back(attention("flash", "forward", seq, 600));
    records.push_back(attention("cudnn", "forward", seq, rate));
    records.push_back(attention("cudnn", "backward", seq, rate * 0.8));
  }
  json second = attention("cudnn", "forward", 4096, 1300);
  second["heads"] = 64;  // another shape of the same length
  second["flops"] = second["flops"].get<double>() * 2;  // twice the work in twice the time
  for (auto& us : second["times_us"]) us = us.get<double>() * 2;
  records.push_back(second);
  const auto r = fit_with(records, dir);
  const auto& t = r.profile["compute"]["attention_fwd_TFLOPs_by_seq_len"];
  CHECK(t["kind"] == "fitted");
  REQUIRE(t["points"].size() == 3);
  CHECK(t["points"][0]["seq_len"].get<double>() == 2048);
  CHECK(t["points"][0]["TFLOPs"].get<double>() == Approx(1000).epsilon(1e-3));
  CHECK(t["points"][1]["TFLOPs"].get<double>() == Approx(1250).epsilon(1e-3));  // the median of 1200 and 1300
  CHECK(r.profile["compute"]["attention_bwd_TFLOPs_by_seq_len"]["points"][2]["TFLOPs"].get<double>() ==
        Approx(1000).epsilon(1e-3));
  // One length measures no dependence: no table, and a base's would be stale, so it goes.
  json base = read_json_file(test::source_path(kBase));
  base["compute"]["attention_fwd_TFLOPs_by_seq_len"] = t;
  json doc = test::synthetic_node_measurements(test::SyntheticTruth{}, 3);
  doc["measurements"].push_back(attention("cudnn", "forward", 4096, 1100));
  doc["measurements"].push_back(attention("cudnn", "backward", 4096, 900));
  const auto one = fit::fit_profile({dir.write("one.json", doc.dump())}, dir.write("base.json", base.dump()), {});
  CHECK_FALSE(one.profile["compute"].contains("attention_fwd_TFLOPs_by_seq_len"));
}
