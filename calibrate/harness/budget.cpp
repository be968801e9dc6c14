// Time budget bookkeeping (see budget.hpp).
#include "budget.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

namespace moesim::cal {

namespace {
std::atomic<bool> g_stop{false};
}

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }

// Relative shares: the sweeps with many points (GEMM grid, collectives) get more.
double group_weight(const std::string& g) {
    if (g == "allreduce") return 0.13;
    if (g == "bucketed") return 0.08;
    if (g == "allgather") return 0.12;
    if (g == "reducescatter") return 0.10;
    if (g == "alltoall") return 0.10;
    if (g == "sendrecv") return 0.06;
    if (g == "gemm") return 0.16;
    if (g == "grouped_gemm") return 0.10;
    if (g == "memory") return 0.07;
    if (g == "interference") return 0.08;
    if (g == "sequence") return 0.04;  // two blocks' kernel sequences: a small share
    return 0.1;
}

Budget::Budget(double total_s, const std::vector<std::string>& groups)
    : total_s_(total_s), start_(std::chrono::steady_clock::now()), group_start_(start_), pending_(groups) {}

double Budget::elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Budget::begin_group(const std::string& group) {
    double wsum = 0;
    for (const auto& g : pending_) wsum += group_weight(g);
    const double w = group_weight(group);
    // Keep 2% of the total in reserve for writing results and shutting down.
    const double left = std::max(0.0, total_s_ * 0.98 - elapsed_s());
    share_s_ = total_s_ > 0 ? left * (wsum > 0 ? w / wsum : 1.0) : 0.0;
    pending_.erase(std::remove(pending_.begin(), pending_.end(), group), pending_.end());
    group_start_ = std::chrono::steady_clock::now();
    GroupRecord r;
    r.group = group;
    r.share_s = share_s_;
    records_.push_back(r);
}

void Budget::end_group() {
    if (!records_.empty())
        records_.back().used_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - group_start_).count();
}

double Budget::group_left_s() const {
    if (total_s_ <= 0) return std::numeric_limits<double>::max();
    const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - group_start_).count();
    return share_s_ - used;
}

bool Budget::afford(double est_s) const { return !stop_requested() && est_s <= group_left_s(); }

void Budget::skip(const std::string& what, const std::string& reason) {
    if (!records_.empty()) records_.back().skipped.emplace_back(what, reason);
}

json::Value Budget::to_json() const {
    json::Value b = json::Value::object();
    b.set("budget_s", total_s_);
    b.set("elapsed_s", elapsed_s());
    json::Value groups = json::Value::array();
    for (const auto& r : records_) {
        json::Value g = json::Value::object();
        g.set("group", r.group);
        g.set("share_s", total_s_ > 0 ? json::Value(r.share_s) : json::Value());
        g.set("used_s", r.used_s);
        json::Value sk = json::Value::array();
        for (const auto& [what, why] : r.skipped) {
            json::Value o = json::Value::object();
            o.set("what", what);
            o.set("reason", why);
            sk.push_back(o);
        }
        g.set("skipped", sk);
        groups.push_back(g);
    }
    b.set("groups", groups);
    return b;
}

}  // namespace moesim::cal
