#include "reports/output_file.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moesim {

namespace {

namespace fs = std::filesystem;

// Temporary files being written, visible to the signal handler. A slot is claimed with an
// atomic flag and holds a NUL-terminated path, so the handler needs no locks or allocation.
constexpr std::size_t kSlots = 16;        // concurrent replace_atomically calls (the CLI makes one at a time)
constexpr std::size_t kPathBytes = 4096;  // PATH_MAX on Linux
// Links followed before giving up, as the kernel does (MAXSYMLINKS, linux/namei.h).
constexpr int kMaxSymlinks = 40;
struct PendingSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  std::array<char, kPathBytes> path{};
};
std::array<PendingSlot, kSlots> g_pending;
std::atomic<unsigned> g_sequence{0};

}  // namespace

class detail::PendingFile {
 public:
  explicit PendingFile(const std::string& path) {
    if (path.size() >= kPathBytes) throw std::runtime_error("cannot write " + path + ": path too long");
    for (auto& slot : g_pending) {
      bool expected = false;
      if (slot.used.compare_exchange_strong(expected, true)) {
        std::memcpy(slot.path.data(), path.c_str(), path.size() + 1);
        slot.ready.store(true);
        slot_ = &slot;
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

namespace {

extern "C" void remove_pending_and_reraise(int sig) {
  for (auto& slot : g_pending) {
    if (slot.ready.load()) ::unlink(slot.path.data());  // async-signal-safe
  }
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write " + path + ": " + why);
}

// 0 on success, else the errno of the failed write.
int write_all(int fd, std::string_view content) {
  const char* next = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, next, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    next += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

// A name for an already open file descriptor (/dev/fd/N, /dev/stdout, /proc/self/fd/N, or
// /proc/PID/fd/N): the shell's process substitution and redirections. Such a name is a window
// onto the descriptor, never a file to replace.
bool is_descriptor_name(const fs::path& path) {
  const std::string text = path.lexically_normal().string();
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    if (text.rfind(prefix, 0) == 0) return true;
  }
  for (const char* name : {"/dev/stdout", "/dev/stderr", "/dev/stdin"}) {
    if (text == name) return true;
  }
  if (text.rfind("/proc/", 0) != 0) return false;
  const std::size_t digits_end = text.find_first_not_of("0123456789", 6);
  return digits_end > 6 && text.compare(digits_end, 4, "/fd/") == 0;
}

// Where `path` leads once its symbolic links are followed: the first name that is no link (it
// may not exist yet: a dangling link's target is created), or a descriptor name on the way.
struct LinkEnd {
  fs::path path;
  bool descriptor = false;
};

LinkEnd follow_links(const std::string& path) {
  fs::path current = path;
  for (int hops = 0; hops <= kMaxSymlinks; ++hops) {
    if (is_descriptor_name(current)) return {current, true};
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return {current, false};
    std::error_code ec;
    const fs::path link = fs::read_symlink(current, ec);
    if (ec) fail(path, "cannot read the symbolic link " + current.string() + ": " + ec.message());
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  fail(path, "too many levels of symbolic links");
}

// ".NAME.tmp.PID.N" in the target's folder, appended piece by piece (gcc 12 warns, -Wrestrict,
// on literal + string).
std::string temporary_name(const fs::path& target) {
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  name += ".";
  name += std::to_string(g_sequence.fetch_add(1));
  return (folder / name).string();
}

// The temporaries ".NAME.tmp.PID.N" of `target` that a process left behind when it was killed
// outright (SIGKILL cannot be caught): removed before a new write to the same path. Only files of
// this user whose process is gone (kill(PID, 0) says ESRCH) are touched; a live writer's file
// stays.
void remove_stale_temporaries(const fs::path& target) {
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string prefix = ".";  // appended piece by piece, as temporary_name does (gcc 12 -Wrestrict)
  prefix += target.filename().string();
  prefix += ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "PID.N"
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789.") != std::string::npos) continue;
    const long pid = std::strtol(rest.substr(0, dot).c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlink(it->path().c_str());
  }
}

}  // namespace

bool is_standard_output(const std::string& path) {
  if (path == "-") return true;
  if (path.empty()) return false;
  struct stat out {
  }, target{};
  if (::fstat(STDOUT_FILENO, &out) != 0 || ::stat(path.c_str(), &target) != 0) return false;
  return out.st_dev == target.st_dev && out.st_ino == target.st_ino;
}

namespace {

// Where a (non-standard-output) path leads and what is there: refused when empty or a folder.
struct Target {
  LinkEnd end;
  struct stat st {};
  bool exists = false;
  bool through() const { return end.descriptor || (exists && !S_ISREG(st.st_mode)); }  // written through
};

Target target_of(const std::string& path) {
  if (path.empty()) fail(path, "empty file name");
  Target t;
  t.end = follow_links(path);
  t.exists = !t.end.descriptor && ::stat(t.end.path.c_str(), &t.st) == 0;
  if (!t.end.descriptor && !t.exists && errno != ENOENT) fail(path, std::strerror(errno));
  if (t.exists && S_ISDIR(t.st.st_mode)) fail(path, "is a directory");
  return t;
}

}  // namespace

void check_output_path(const std::string& path) {
  if (is_standard_output(path)) return;
  const Target t = target_of(path);
  if (t.through()) {
    if (::access(path.c_str(), W_OK) != 0) fail(path, std::strerror(errno));
    return;
  }
  // A regular file is replaced through a temporary file beside it: its folder must take one.
  const fs::path folder = t.end.path.parent_path().empty() ? fs::path(".") : t.end.path.parent_path();
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) != 0) fail(path, "folder " + folder.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(dir.st_mode)) fail(path, folder.string() + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    fail(path, "cannot create a file in " + folder.string() + ": " + std::strerror(errno));
  }
}

// Devices, FIFOs and descriptor names are written through: opened for writing, never created or
// renamed over (a character device stays a device, a FIFO's reader gets the data). A regular
// file (or one not there yet) gets a temporary file in the same folder, flushed to disk and
// renamed over it on commit, so an existing file is only ever replaced by a complete one; its
// permissions are kept (else the umask's default for a new file).
OutputStream::OutputStream(const std::string& path) : path_(path) {
  if (is_standard_output(path)) return;
  const Target t = target_of(path);
  if (t.through()) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) fail(path, std::strerror(errno));
    return;
  }
  target_ = t.end.path.string();
  remove_stale_temporaries(t.end.path);
  tmp_ = temporary_name(t.end.path);
  pending_ = std::make_unique<detail::PendingFile>(tmp_);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const fs::path folder = fs::path(tmp_).parent_path();
    fail(path, "cannot create a temporary file in " + folder.string() + ": " + std::strerror(errno));
  }
  // Best effort: a file owned by someone else may refuse the mode, and the content matters more.
  if (t.exists) (void)::fchmod(fd_, t.st.st_mode & 07777);
}

OutputStream::~OutputStream() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
}

void OutputStream::write(std::string_view text) {
  if (committed_) fail(path_, "written to after it was complete");
  if (fd_ < 0) {
    std::cout << text;
    if (!std::cout) fail(path_, "standard output is closed or full");
    return;
  }
  const int err = write_all(fd_, text);
  if (err != 0) fail(path_, std::strerror(err));
}

void OutputStream::commit() {
  if (fd_ < 0) {
    std::cout.flush();
    if (!std::cout) fail(path_, "standard output is closed or full");
    return;
  }
  int err = 0;
  // On disk before the rename, so that a crash cannot leave the target empty or cut short.
  if (!tmp_.empty() && ::fsync(fd_) != 0) err = errno;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && !tmp_.empty() && ::rename(tmp_.c_str(), target_.c_str()) != 0) err = errno;
  if (err != 0) fail(path_, std::strerror(err));
  committed_ = true;
}

void write_output(const std::string& path, const std::string& content) {
  OutputStream out(path);
  out.write(content);
  out.commit();
}

// Every signal whose default action ends the process and that a handler can catch: the shell's
// Ctrl-C and Ctrl-backslash, kill, a closed terminal or pipe, timers, user signals and resource limits.
// A signal the parent set to be ignored (nohup's SIGHUP, a SIGPIPE ignored by the caller) stays
// ignored.
void remove_partial_outputs_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = remove_pending_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGVTALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace moesim
