// Progress on stderr: a bar with ETA when stderr is a terminal, else one plain line at the end
// (and every 10% for long runs), so logs stay readable.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace moesim::cli {

class Progress {
 public:
  Progress(std::string what, std::size_t total)
      : what_(std::move(what)), total_(total), tty_(::isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}

  void update(std::size_t done, std::size_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = done > 0 ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * static_cast<double>(done) / static_cast<double>(total));
      std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %.1fs elapsed, ETA %.1fs ", what_.c_str(),
                   std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(), done, total, elapsed,
                   eta);
    } else if (total >= 100 && done % (total / 10) == 0 && done < total) {
      std::fprintf(stderr, "%s: %zu/%zu points, %.1fs elapsed, ETA %.1fs\n", what_.c_str(), done, total, elapsed, eta);
    }
  }

  void finish() {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "%s: %zu points in %.2fs (%.0f points/s)\n", what_.c_str(), total_, elapsed,
                 elapsed > 0 ? static_cast<double>(total_) / elapsed : 0.0);
  }

 private:
  std::string what_;
  std::size_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace moesim::cli
