// Output paths are the user's: a regular file is replaced atomically, while a device, a FIFO, a
// descriptor name (/dev/fd/N, process substitution) or a symbolic link is written through or
// followed, never replaced by a regular file. `-` outputs are pure data.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/output_file.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
namespace fs = std::filesystem;

namespace {

mode_t lstat_mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

std::size_t entries_in(const std::string& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// Runs a shell command line; returns its exit code.
int shell(const std::string& line) {
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const std::string kScenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json");

}  // namespace

TEST_CASE("write_output writes through a character device and leaves it a device", "[unit][safety]") {
  test::TempDir dir;
  const std::string dev = dir.path("null");
  // The same device as /dev/null (major 1, minor 3); making one needs CAP_MKNOD (root in CI).
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    WARN("mknod refused (not root?); checking the system's /dev/null instead");
    REQUIRE(S_ISCHR(lstat_mode("/dev/null")));
    write_output("/dev/null", "{}\n");
    CHECK(S_ISCHR(lstat_mode("/dev/null")));
    return;
  }
  write_output(dev, "{\"report\": true}\n");
  CHECK(S_ISCHR(lstat_mode(dev)));
  CHECK(entries_in(dir.path("")) == 1);  // no temporary file beside it
}

TEST_CASE("write_output writes through a FIFO to its reader", "[unit][safety]") {
  test::TempDir dir;
  const std::string fifo = dir.path("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = test::slurp(fifo); });
  const std::string content(200000, 'x');  // more than a pipe buffer: the reader must drain it
  write_output(fifo, content);
  reader.join();
  CHECK(received == content);
  CHECK(S_ISFIFO(lstat_mode(fifo)));
  CHECK(entries_in(dir.path("")) == 1);
}

TEST_CASE("write_output writes through an open descriptor's name (/dev/fd/N)", "[unit][safety]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  write_output("/dev/fd/" + std::to_string(fds[1]), "through the pipe\n");
  ::close(fds[1]);
  char buf[64] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  CHECK(std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))) == "through the pipe\n");
}

TEST_CASE("write_output follows a symbolic link and replaces its target in the target's folder", "[unit][safety]") {
  test::TempDir dir;
  fs::create_directories(dir.path("real"));
  const std::string target = dir.write("real/report.json", "old\n");
  REQUIRE(::chmod(target.c_str(), 0640) == 0);
  const std::string link = dir.path("link.json");
  fs::create_symlink("real/report.json", link);  // relative, as users make them
  const std::string chain = dir.path("chain.json");
  fs::create_symlink("link.json", chain);

  write_output(chain, "new\n");
  CHECK(S_ISLNK(lstat_mode(chain)));
  CHECK(S_ISLNK(lstat_mode(link)));
  CHECK(fs::read_symlink(link) == "real/report.json");
  CHECK(test::slurp(target) == "new\n");
  CHECK((lstat_mode(target) & 07777) == 0640);  // the replaced file's permissions are kept
  CHECK(entries_in(dir.path("real")) == 1);     // the temporary was in the target's folder, and is gone
  CHECK(entries_in(dir.path("")) == 3);

  SECTION("a dangling link gets its target created") {
    const std::string dangling = dir.path("new-link.json");
    fs::create_symlink("real/new.json", dangling);
    write_output(dangling, "fresh\n");
    CHECK(S_ISLNK(lstat_mode(dangling)));
    CHECK(test::slurp(dir.path("real/new.json")) == "fresh\n");
  }
}

TEST_CASE("write_output refuses a directory and a missing folder, naming the path", "[unit][safety]") {
  test::TempDir dir;
  CHECK_THROWS_WITH(write_output(dir.path(""), "x"), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(write_output(dir.path("no/such/folder.json"), "x"), Catch::Contains("no/such/folder.json"));
  CHECK(entries_in(dir.path("")) == 0);
}

TEST_CASE("moesim simulate --json /dev/null keeps /dev/null a device", "[unit][safety]") {
  REQUIRE(test::run_cli("simulate " + kScenario + " --json /dev/null") == 0);
  CHECK(S_ISCHR(lstat_mode("/dev/null")));
}

TEST_CASE("moesim simulate --json >(...) writes through process substitution", "[unit][safety]") {
  if (shell("command -v bash >/dev/null 2>&1") != 0) {
    WARN("no bash: process substitution not tested");
    return;
  }
  test::TempDir dir;
  const std::string out = dir.path("via-pipe.json");
  // bash >= 4.4 sets $! to the process substitution, so the test waits for cat to finish.
  const std::string line =
      "bash -c '\"$0\" simulate \"$1\" --json >(cat > \"$2\") >/dev/null; rc=$?; wait $!; exit $rc' " +
      std::string(MOESIM_CLI) + " " + kScenario + " " + out;
  REQUIRE(shell(line) == 0);
  const auto doc = nlohmann::json::parse(test::slurp(out));
  CHECK(doc.contains("step_time_s"));
  CHECK(entries_in(dir.path("")) == 1);
}

TEST_CASE("'-' outputs are pure data: the listing goes to standard error", "[unit][safety]") {
  test::TempDir dir;
  const std::string cli = std::string(MOESIM_CLI);
  const std::string sweep = cli + " sweep " + test::source_path("scenarios/fig8/fig8a.json") + " -j 1";
  REQUIRE(shell(sweep + " --csv - >" + dir.path("csv.out") + " 2>" + dir.path("csv.err")) == 0);
  const std::string csv = test::slurp(dir.path("csv.out"));
  const std::string header = csv.substr(0, csv.find('\n'));
  CHECK(header.rfind("index,", 0) == 0);
  // Every line of stdout is a CSV row with the header's number of fields (no listing mixed in).
  const auto commas = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  std::size_t rows = 0;
  for (std::size_t at = 0, next; at < csv.size(); at = next + 1) {
    next = csv.find('\n', at);
    const std::string line = csv.substr(at, next - at);
    if (commas(line) < commas(header)) FAIL("not a CSV row: " << line);
    ++rows;
  }
  CHECK(rows > 1);
  CHECK(test::slurp(dir.path("csv.err")).find("MFU") != std::string::npos);  // the table went to stderr

  REQUIRE(shell(cli + " simulate " + kScenario + " --json - >" + dir.path("sim.out") + " 2>" + dir.path("sim.err")) ==
          0);
  CHECK_NOTHROW(nlohmann::json::parse(test::slurp(dir.path("sim.out"))));
  CHECK_FALSE(test::slurp(dir.path("sim.err")).empty());

  // Two documents cannot share standard output.
  CHECK(shell(sweep + " --json - --csv - >/dev/null 2>" + dir.path("two.err")) == 2);
  CHECK(test::slurp(dir.path("two.err")).find("at most one output may be '-'") != std::string::npos);
}

TEST_CASE("A name of standard output (/dev/stdout, /dev/fd/1) is pure data as '-' is", "[unit][safety]") {
  test::TempDir dir;
  const std::string cli = std::string(MOESIM_CLI);
  for (const std::string name : {"/dev/stdout", "/dev/fd/1"}) {
    INFO(name);
    REQUIRE(shell(cli + " simulate " + kScenario + " --json " + name + " >" + dir.path("sim.out") + " 2>" +
                  dir.path("sim.err")) == 0);
    CHECK_NOTHROW(nlohmann::json::parse(test::slurp(dir.path("sim.out"))));
    CHECK(test::slurp(dir.path("sim.err")).find("MFU") != std::string::npos);  // the table went to stderr
    REQUIRE(shell(cli + " ledger " + kScenario + " --json " + name + " >" + dir.path("ledger.out") + " 2>/dev/null") ==
            0);
    CHECK_NOTHROW(nlohmann::json::parse(test::slurp(dir.path("ledger.out"))));
  }
  REQUIRE(shell(cli + " sweep " + test::source_path("scenarios/fig8/fig8a.json") + " -j 1 --csv /dev/stdout >" +
                dir.path("csv.out") + " 2>/dev/null") == 0);
  CHECK(test::slurp(dir.path("csv.out")).rfind("index,", 0) == 0);  // the CSV header first: no table before it
  // Two documents cannot share standard output under two of its names either.
  CHECK(shell(cli + " simulate " + kScenario + " --json - --trace /dev/stdout >/dev/null 2>/dev/null") == 2);
}

TEST_CASE("An output path that cannot be written fails before any work, in every command", "[unit][safety]") {
  test::TempDir dir;
  const std::string cli = std::string(MOESIM_CLI);
  const std::string missing = dir.path("no-such-folder/out.json");
  const std::string cases[] = {
      "simulate " + kScenario + " --json " + missing,
      "simulate " + kScenario + " --trace " + missing,
      "ledger " + kScenario + " --json " + missing,
      "sweep " + kScenario + " --csv " + missing,
      "compare " + kScenario + " --design ddp --html " + missing,
      "plan " + kScenario + " --gpus 64 --json " + missing,
      "plan " + kScenario + " --gpus 64 --html " + dir.path(""),
      "validate --json " + missing,
  };
  for (const auto& args : cases) {
    INFO(args);
    CHECK(shell(cli + " " + args + " >" + dir.path("out") + " 2>" + dir.path("err")) == 2);
    // The option's own check refused it as the command line was read: before any work.
    const std::string err = test::slurp(dir.path("err"));
    CHECK((err.find("--json: cannot write") != std::string::npos ||
           err.find("--csv: cannot write") != std::string::npos ||
           err.find("--html: cannot write") != std::string::npos ||
           err.find("--trace: cannot write") != std::string::npos));
    CHECK(test::slurp(dir.path("out")).empty());
  }
}
