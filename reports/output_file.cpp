#include "reports/output_file.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fcntl.h>
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

class PendingFile {
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
int write_all(int fd, const std::string& content) {
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

// Devices, FIFOs and descriptor names are written through: opened for writing, never created or
// renamed over (a character device stays a device, a FIFO's reader gets the data).
void write_through(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  int err = write_all(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail(path, std::strerror(err));
}

// A regular file (or one not there yet) at `target`: the content goes to a temporary file in the
// same folder, is flushed to disk and renamed over the target, so an existing file is only ever
// replaced by a complete one. `mode`: the permissions of the file it replaces, kept (else the
// umask's default for a new file).
void replace_atomically(const std::string& path, const fs::path& target, const std::string& content,
                        const mode_t* mode) {
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // ".NAME.tmp.PID.N", appended piece by piece (gcc 12 warns, -Wrestrict, on literal + string).
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  name += ".";
  name += std::to_string(g_sequence.fetch_add(1));
  const std::string tmp = (folder / name).string();
  const PendingFile pending(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, "cannot create a temporary file in " + folder.string() + ": " + std::strerror(errno));
  // Best effort: a file owned by someone else may refuse the mode, and the content matters more.
  if (mode != nullptr) (void)::fchmod(fd, *mode);
  int err = write_all(fd, content);
  // On disk before the rename, so that a crash cannot leave the target empty or cut short.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(path, std::strerror(err));
  }
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

}  // namespace

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    std::cout.flush();
    if (!std::cout) fail(path, "standard output is closed or full");
    return;
  }
  if (path.empty()) fail(path, "empty file name");
  const LinkEnd end = follow_links(path);
  if (end.descriptor) return write_through(path, content);
  struct stat st {};
  if (::stat(end.path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(path, std::strerror(errno));
    return replace_atomically(path, end.path, content, nullptr);
  }
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
  if (!S_ISREG(st.st_mode)) return write_through(path, content);
  const mode_t mode = st.st_mode & 07777;
  replace_atomically(path, end.path, content, &mode);
}

void remove_partial_outputs_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = remove_pending_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace moesim
