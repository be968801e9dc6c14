// Output safety: a report replaces an existing file only when complete; a terminating signal
// (SIGINT, SIGTERM, SIGPIPE, SIGUSR1, SIGXCPU, ...) during a run or during the write itself leaves
// the old file and no temporary file behind; a temporary left by SIGKILL goes on the next write.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/output_file.hpp"
#include "tests/support/fixtures.hpp"

extern char** environ;

using namespace moesim;

namespace {

constexpr std::size_t kBigBytes = 128u << 20;

std::vector<std::string> leftovers(const std::string& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  }
  return out;
}

bool wait_for_temporary(const std::string& dir, const std::string& keep, pid_t child) {
  for (int i = 0; i < 20000; ++i) {
    if (!leftovers(dir, keep).empty()) return true;
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return false;  // finished first
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return false;
}

}  // namespace

TEST_CASE("write_output: a signal during the write removes the temporary file and keeps the old one",
          "[unit][safety]") {
  for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGUSR1, SIGXCPU}) {
    test::TempDir dir;
    const std::string target = dir.write("report.json", "old\n");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      remove_partial_outputs_on_signal();
      // Large enough that writing and syncing it takes far longer than the parent's poll.
      const std::string big(kBigBytes, 'x');
      try {
        write_output(target, big);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    const bool caught_mid_write =
        wait_for_temporary(std::filesystem::path(target).parent_path().string(), "report.json", child);
    if (!caught_mid_write) {
      WARN("the write finished before the temporary file was seen; nothing to interrupt");
      continue;
    }
    ::kill(child, sig);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (WIFSIGNALED(status)) {
      CHECK(WTERMSIG(status) == sig);
      CHECK(test::slurp(target) == "old\n");
    } else if (WEXITSTATUS(status) == 3) {
      WARN("the write itself failed (disk full?); the old file must still be there");
      CHECK(test::slurp(target) == "old\n");
    } else {
      // The signal landed after the rename: then the new file is the complete one.
      CHECK(WEXITSTATUS(status) == 0);
      CHECK(std::filesystem::file_size(target) == kBigBytes);
    }
    CHECK(leftovers(std::filesystem::path(target).parent_path().string(), "report.json").empty());
  }
}

TEST_CASE("moesim sweep interrupted by SIGINT leaves the existing report untouched", "[unit][safety]") {
  test::TempDir dir;
  const std::string out = dir.write("sweep.json", "old\n");
  const std::string scenario = test::source_path("scenarios/fig8/fig8b.json");
  std::vector<std::string> args = {MOESIM_CLI,
                                   "sweep",
                                   scenario,
                                   "--vary",
                                   "architecture.moe.num_experts=8..8192+8",
                                   "-j",
                                   "1",
                                   "--json",
                                   out,
                                   "--csv",
                                   dir.path("sweep.csv")};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t child = 0;
  REQUIRE(posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  // 1,024 Figure-8 points take over a second; interrupt while they run.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(child, SIGINT);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(test::slurp(out) == "old\n");
  CHECK_FALSE(std::filesystem::exists(dir.path("sweep.csv")));
  CHECK(leftovers(std::filesystem::path(out).parent_path().string(), "sweep.json").empty());
}

TEST_CASE("write_output: a temporary left by a killed process goes on the next write to that path", "[unit][safety]") {
  test::TempDir dir;
  const std::string target = dir.write("report.json", "old\n");
  // A process that has ended: its id names no process any more (until the system reuses it).
  const pid_t gone = ::fork();
  REQUIRE(gone >= 0);
  if (gone == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(gone, &status, 0) == gone);
  const std::string stale = ".report.json.tmp." + std::to_string(gone) + ".0";
  dir.write(stale, "partial");
  // A live writer's temporary (this test's parent process) and another report's stay.
  const std::string live = ".report.json.tmp." + std::to_string(::getppid()) + ".0";
  dir.write(live, "partial");
  const std::string other = ".other.json.tmp." + std::to_string(gone) + ".0";
  dir.write(other, "partial");
  write_output(target, "new\n");
  CHECK(test::slurp(target) == "new\n");
  CHECK_FALSE(std::filesystem::exists(dir.path(stale)));
  CHECK(std::filesystem::exists(dir.path(live)));
  CHECK(std::filesystem::exists(dir.path(other)));
}

TEST_CASE("remove_partial_outputs_on_signal leaves a signal the parent ignores ignored", "[unit][safety]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGHUP, SIG_IGN);  // as nohup starts a command
    remove_partial_outputs_on_signal();
    struct sigaction hup {
    }, usr{};
    ::sigaction(SIGHUP, nullptr, &hup);
    ::sigaction(SIGUSR2, nullptr, &usr);
    ::_exit(hup.sa_handler == SIG_IGN && usr.sa_handler != SIG_DFL ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
