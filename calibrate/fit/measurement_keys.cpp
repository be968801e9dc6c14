#include "calibrate/fit/measurement_keys.hpp"

namespace moesim::fit::keys {

namespace {

const Keys kCommonOptional = {{"iters", T::integer}, {"warmup", T::integer}, {"median_us", T::number},
                              {"p10_us", T::number}, {"p90_us", T::number},  {"mean_us", T::number},
                              {"min_us", T::number}, {"max_us", T::number}};
const Keys kCollective = {{"count", T::integer},
                          {"op", T::string},
                          {"algbw_GBps", T::number},
                          {"busbw_GBps", T::number},
                          {"check_mismatches", T::integer},
                          {"in_place", T::boolean}};
// Both sides of the interference group.
const Keys kInterferenceBoth = {  // the slowed kernel alone, and its time beside the background over alone
    {"alone_median_us", T::number},
    {"alone_p10_us", T::number},
    {"alone_p90_us", T::number},
    {"slowdown", T::number_or_null},
    // the background: its repetitions, its time alone and beside
    {"background_reps", T::integer},
    {"background_alone_median_us", T::number},
    {"background_overlapped_mean_us", T::number},
    {"background_slowdown", T::number},
    {"check_rel_error", T::number_or_null}};

// The class kernels' shapes: row width (gather, softmax); the multi-tensor AdamW's tensor list.
const Keys kMemoryClassKernels = {{"row_elements", T::integer},
                                  {"tensors", T::integer},
                                  {"chunks", T::integer},
                                  {"chunk_elements", T::integer},
                                  {"shard_ranks", T::integer}};

Keys joined(Keys a, const Keys& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::map<std::string, Keys> kKindExtras = {
    {"all_reduce_bucketed",
     {{"buckets", T::integer},
      {"bucket_bytes", T::int_list},
      {"cap_bytes", T::integer},
      {"pool_bytes", T::integer},
      {"buffers_reused", T::boolean}}},
    {"all_gather", {{"send_count", T::integer}}},
    {"reduce_scatter", {{"recv_count", T::integer}}},
    {"all_to_all",
     {{"d", T::integer},
      {"row_bytes", T::integer},
      {"rows_per_rank", T::integer},
      {"max_send_rows", T::integer},
      {"max_recv_rows", T::integer},
      {"counts", T::any},
      {"zipf_s", T::number},
      {"experts", T::integer},
      {"top_k", T::integer},
      {"seed", T::integer}}},
    {"send_recv", {{"src_rank", T::integer}, {"dst_rank", T::integer}}},
    {"gemm",
     {{"name", T::string},
      {"count", T::integer},
      {"accumulate", T::string},
      {"library", T::string},
      {"algo", T::string},
      {"workspace_bytes", T::integer},
      {"operand_sets", T::integer},
      {"flops", T::number},
      {"tflops", T::number},
      {"check_rel_error", T::number_or_null}}},
    {"grouped_gemm",
     {{"rows_dim", T::string},
      {"tokens", T::integer},
      {"experts", T::integer},
      {"top_k", T::integer},
      {"seed", T::integer},
      {"active_experts", T::integer},
      {"flops", T::number},
      {"tflops", T::number},
      {"check_rel_error", T::number_or_null}}},
    {"memory", joined(kMemoryClassKernels, {{"elements", T::integer},
                                            {"bytes_per_element", T::number},
                                            {"buffer_copies", T::integer},
                                            {"GBps", T::number},
                                            {"check_mismatches", T::integer}})},
    {"gemm_fp8",
     {{"scaling", T::string},
      {"library", T::string},
      {"flops", T::number},
      {"ratio", T::number},
      {"check_rel_error", T::number_or_null}}},
    {"grouped_gemm_fp8",
     {{"scaling", T::string},
      {"experts", T::integer},
      {"flops", T::number},
      {"ratio", T::number},
      {"check_rel_error", T::number_or_null}}},
    {"attention",
     {{"backend", T::string}, {"gqa", T::string}, {"tflops", T::number}, {"check_rel_error", T::number_or_null}}},
    {"sequence",
     {{"example_layer", T::integer},
      {"layers_of_kind", T::integer},
      {"tokens", T::integer},
      {"model", T::any},
      {"model_defaults_used", T::any},
      {"block_params", T::integer},
      {"experts", T::integer},
      {"top_k", T::integer},
      {"seed", T::integer},
      {"zipf_s", T::number},
      {"grouped_method", T::string},
      {"stream", T::string},
      {"kernel_count", T::integer},
      {"flops", T::number},
      {"memory_bytes", T::integer},
      {"buffer_bytes", T::integer},
      {"tflops", T::number},
      {"kernels_sum_median_us", T::number},
      {"phase_sum_median_us", T::any},
      {"sequence_over_kernel_sum", T::number},
      {"includes", T::any},
      {"excludes", T::any},
      {"check_mismatches", T::integer},
      {"check_rel_error", T::number_or_null}}},
    {"interference",
     joined(kInterferenceBoth, {{"background_bytes", T::integer}, {"tflops_alone", T::number}, {"tflops", T::number}})},
    {"interference_comm", joined(kInterferenceBoth, {{"count", T::integer},
                                                     {"op", T::string},
                                                     {"algbw_GBps", T::number},
                                                     {"busbw_GBps", T::number},
                                                     {"launched_iters", T::integer},
                                                     {"window_us", T::number},
                                                     {"alone_busbw_GBps", T::number},
                                                     {"background_name", T::string},
                                                     {"background_layout", T::string},
                                                     {"background_method", T::string},
                                                     {"background_flops", T::number}})},
};

}  // namespace

void info(const JsonReader& r, const nlohmann::json& raw, const char* key, T type) {
  if (!r.has(key)) return;
  const auto& v = raw.at(key);
  switch (type) {
    case T::integer: r.integer(key, Range::non_negative()); break;
    case T::number: r.number(key, Range::non_negative()); break;
    case T::number_or_null:
      if (!v.is_null()) r.number(key, Range::non_negative());
      break;
    case T::string: r.string(key); break;
    case T::boolean: r.boolean(key); break;
    case T::int_list: r.integer_list(key, Range::non_negative()); break;
    case T::any: break;
  }
}

const Keys& common_optional_keys() { return kCommonOptional; }
const Keys& collective_keys() { return kCollective; }
const std::map<std::string, Keys>& kind_extra_keys() { return kKindExtras; }

}  // namespace moesim::fit::keys
