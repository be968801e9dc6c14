#include "reports/atomic_file.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace moesim {

namespace {

// Temporary files being written, visible to the signal handler. A slot is claimed with an
// atomic flag and holds a NUL-terminated path, so the handler needs no locks or allocation.
constexpr std::size_t kSlots = 16;  // concurrent write_atomic calls (the CLI makes one at a time)
constexpr std::size_t kPathBytes = 4096;  // PATH_MAX on Linux
struct PendingSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  std::array<char, kPathBytes> path{};
};
std::array<PendingSlot, kSlots> g_pending;
std::atomic<unsigned> g_sequence{0};

class PendingFile {
 public:
  explicit PendingFile(const std::string& path) {
    if (path.size() >= kPathBytes) throw std::runtime_error("cannot write " + path + ": path too long");
    for (auto& s : g_pending) {
      bool expected = false;
      if (s.used.compare_exchange_strong(expected, true)) {
        std::memcpy(s.path.data(), path.c_str(), path.size() + 1);
        s.ready.store(true);
        slot_ = &s;
        return;
      }
    }
    throw std::runtime_error("cannot write " + path + ": too many files being written at once");
  }
  ~PendingFile() {
    slot_->ready.store(false);
    slot_->used.store(false);
  }
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

 private:
  PendingSlot* slot_ = nullptr;
};

extern "C" void remove_pending_and_reraise(int sig) {
  for (auto& s : g_pending) {
    if (s.ready.load()) ::unlink(s.path.data());  // async-signal-safe
  }
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

// 0 on success, else the errno of the failed write.
int write_all(int fd, const std::string& content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

void write_atomic(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    std::cout.flush();
    return;
  }
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp." +
                                                   std::to_string(::getpid()) + "." +
                                                   std::to_string(g_sequence.fetch_add(1))))
                              .string();
  const PendingFile pending(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("cannot write " + path + ": cannot create " + tmp + ": " + std::strerror(errno));
  int err = write_all(fd, content);
  // On disk before the rename, so that a crash cannot leave the target empty or cut short.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
  }
}

void remove_partial_outputs_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = remove_pending_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace moesim
