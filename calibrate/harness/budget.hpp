// The run's wall-time budget. Each measurement group gets a share of what is left when it starts
// (its weight over the weights of the groups still to run), so time one group leaves unused
// passes on to the next. Groups ask afford() before each point and record what they skip.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "json.hpp"

namespace moesim::cal {

// Set from the SIGINT/SIGTERM handler: stop taking new points, write what was taken.
void request_stop();
bool stop_requested();

class Budget {
  public:
    Budget(double total_s, const std::vector<std::string>& groups);

    void begin_group(const std::string& group);
    void end_group();
    double group_left_s() const;      // seconds left in the current group's share (huge if unlimited)
    bool afford(double est_s) const;  // est_s fits the share and no stop was requested
    void skip(const std::string& what, const std::string& reason);
    double elapsed_s() const;
    bool limited() const { return total_s_ > 0; }

    json::Value to_json() const;

  private:
    struct GroupRecord {
        std::string group;
        double share_s = 0, used_s = 0;
        std::vector<std::pair<std::string, std::string>> skipped;
    };
    double total_s_;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point group_start_;
    std::vector<std::string> pending_;
    std::vector<GroupRecord> records_;
    double share_s_ = 0;
};

double group_weight(const std::string& group);

}  // namespace moesim::cal
