// Progress tables (see report_table.hpp).
#include "report_table.hpp"

#include <cstdio>

namespace moesim::cal {

void print_banner(const std::string& text) {
    std::printf("\n### %s\n", text.c_str());
    std::fflush(stdout);
}

void print_note(const std::string& text) {
    std::printf("# %s\n", text.c_str());
    std::fflush(stdout);
}

void print_collective_header(const std::string& title, int group_size) {
    std::printf("#\n# %s  (group size %d)\n", title.c_str(), group_size);
    std::printf("#%14s %13s %7s %6s %-22s %11s %11s %11s %9s %9s %7s\n", "size(B)", "count", "type", "redop", "label",
                "median(us)", "p10(us)", "p90(us)", "algbw", "busbw", "check");
    std::printf("#%14s %13s %7s %6s %-22s %11s %11s %11s %9s %9s %7s\n", "", "(elements)", "", "", "", "", "", "",
                "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
}

void print_collective_row(std::int64_t bytes, std::int64_t count, const std::string& type, const std::string& redop,
                          const std::string& label, const TimedRun& r, double algbw, double busbw,
                          const std::string& check) {
    std::printf(" %14lld %13lld %7s %6s %-22s %11.2f %11.2f %11.2f %9.2f %9.2f %7s\n", static_cast<long long>(bytes),
                static_cast<long long>(count), type.c_str(), redop.c_str(), label.c_str(), r.stats.median, r.stats.p10,
                r.stats.p90, algbw, busbw, check.c_str());
    std::fflush(stdout);
}

void print_gemm_header(const std::string& title) {
    std::printf("#\n# %s\n", title.c_str());
    std::printf("# %-34s %7s %7s %7s %6s %11s %11s %11s %9s %7s\n", "name", "m", "n", "k", "layout", "median(us)",
                "p10(us)", "p90(us)", "TFLOP/s", "check");
    std::fflush(stdout);
}

void print_gemm_row(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& layout,
                    const TimedRun& r, double tflops, const std::string& check) {
    std::printf("  %-34s %7lld %7lld %7lld %6s %11.2f %11.2f %11.2f %9.1f %7s\n", name.c_str(),
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), layout.c_str(),
                r.stats.median, r.stats.p10, r.stats.p90, tflops, check.c_str());
    std::fflush(stdout);
}

void print_rate_header(const std::string& title, const std::string& rate_unit) {
    std::printf("#\n# %s\n", title.c_str());
    std::printf("# %-40s %14s %11s %11s %11s %10s %7s\n", "name", "size", "median(us)", "p10(us)", "p90(us)",
                rate_unit.c_str(), "check");
    std::fflush(stdout);
}

void print_rate_row(const std::string& name, std::int64_t size, const TimedRun& r, double rate,
                    const std::string& check) {
    std::printf("  %-40s %14lld %11.2f %11.2f %11.2f %10.2f %7s\n", name.c_str(), static_cast<long long>(size),
                r.stats.median, r.stats.p10, r.stats.p90, rate, check.c_str());
    std::fflush(stdout);
}

void print_skip(const std::string& what, const std::string& reason) {
    std::printf("# skipped %s: %s\n", what.c_str(), reason.c_str());
    std::fflush(stdout);
}

}  // namespace moesim::cal
