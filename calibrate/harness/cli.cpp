// Command-line parsing for moesim-calibrate (see cli.hpp and README.md).
#include "cli.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "errors.hpp"

namespace moesim::cal {

const std::vector<std::string>& all_group_names() {
    static const std::vector<std::string> names = {"allreduce", "bucketed",     "allgather", "reducescatter",
                                                   "alltoall",  "sendrecv",     "gemm",      "grouped_gemm",
                                                   "memory",    "interference", "sequence"};
    return names;
}

std::string usage_text() {
    std::ostringstream o;
    o << "usage: moesim-calibrate [options]\n"
         "  --shapes FILE          model shapes (JSON, schema moesim-shapes/1); default: built-in fig8-n48\n"
         "  --only LIST            comma list of groups: ";
    for (std::size_t i = 0; i < all_group_names().size(); ++i) o << (i ? "," : "") << all_group_names()[i];
    o << "\n"
         "  --budget-s SECONDS     total wall-time budget; each group gets a share and trims its sweep\n"
         "  --iters N              timed iterations per point (default 50; budget may lower to 5)\n"
         "  --warmup N             untimed warm-up iterations per point (default 5)\n"
         "  -o FILE                output JSON (default measurements.json)\n"
         "  --quick                small sweeps and few iterations, for smoke runs\n"
         "  --seed N               base seed for data and routing (default 20240611)\n"
         "  --max-bytes N          cap on any one device buffer (default: from free memory)\n"
         "  --sequence-grouped M   the sequence group's grouped GEMMs: batched (cublasGemmGroupedBatchedEx,\n"
         "                         default, where cuBLAS has it) or per_expert (one cuBLASLt GEMM per expert)\n"
         "  --write-default-shapes FILE   write the built-in shapes as JSON and exit\n"
         "  --inject-failure LIB:NAME     test the failure path: the first cuda|nccl|cublas call inside a\n"
         "                         measurement whose name contains NAME fails as the library would\n"
         "  -h, --help             this text\n";
    return o.str();
}

namespace {

[[noreturn]] void bad(const std::string& what) { throw HarnessError("command line: " + what + "\n" + usage_text()); }

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
    T v{};
    auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size()) bad(flag + " expects a number, got '" + text + "'");
    return v;
}

std::vector<std::string> split_groups(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        const auto& all = all_group_names();
        if (std::find(all.begin(), all.end(), item) == all.end()) {
            std::string valid;
            for (const auto& n : all) valid += (valid.empty() ? "" : ", ") + n;
            bad("unknown group '" + item + "' in --only; valid groups: " + valid);
        }
        if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
    if (out.empty()) bad("--only needs at least one group");
    // Run in the canonical order regardless of the order given.
    std::vector<std::string> ordered;
    for (const auto& n : all_group_names())
        if (std::find(out.begin(), out.end(), n) != out.end()) ordered.push_back(n);
    return ordered;
}

}  // namespace

Options parse_options(int argc, char** argv) {
    Options o;
    o.groups = all_group_names();
    for (int i = 0; i < argc; ++i) o.argv.emplace_back(argv[i]);
    bool iters_set = false, warmup_set = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) bad(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--shapes")
            o.shapes_file = next();
        else if (a == "--only")
            o.groups = split_groups(next());
        else if (a == "--budget-s")
            o.budget_s = parse_number<double>(a, next());
        else if (a == "--iters") {
            o.iters = parse_number<int>(a, next());
            iters_set = true;
        } else if (a == "--warmup") {
            o.warmup = parse_number<int>(a, next());
            warmup_set = true;
        } else if (a == "-o" || a == "--output")
            o.output = next();
        else if (a == "--quick")
            o.quick = true;
        else if (a == "--seed")
            o.seed = parse_number<std::uint64_t>(a, next());
        else if (a == "--max-bytes")
            o.max_bytes = parse_number<std::int64_t>(a, next());
        else if (a == "--sequence-grouped") {
            o.sequence_grouped = next();
            if (o.sequence_grouped != "batched" && o.sequence_grouped != "per_expert")
                bad("--sequence-grouped expects batched or per_expert, got '" + o.sequence_grouped + "'");
        } else if (a == "--write-default-shapes")
            o.write_default_shapes = next();
        else if (a == "--inject-failure") {
            const std::string v = next();
            const auto colon = v.find(':');
            o.inject_library = v.substr(0, colon);
            if (colon == std::string::npos || colon + 1 == v.size() ||
                (o.inject_library != "cuda" && o.inject_library != "nccl" && o.inject_library != "cublas"))
                bad("--inject-failure expects LIB:NAME with LIB cuda, nccl or cublas, e.g. nccl:all_gather");
            o.inject_measurement = v.substr(colon + 1);
        } else
            bad("unknown option '" + a + "'");
    }
    if (o.quick) {
        if (!iters_set) o.iters = 5;
        if (!warmup_set) o.warmup = 2;
    }
    if (o.iters < 1) bad("--iters must be >= 1");
    if (o.warmup < 0) bad("--warmup must be >= 0");
    if (o.budget_s < 0) bad("--budget-s must be >= 0");
    if (o.max_bytes < 0) bad("--max-bytes must be >= 0");
    o.min_iters = std::min(o.min_iters, o.iters);
    return o;
}

}  // namespace moesim::cal
