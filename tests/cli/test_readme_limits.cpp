// The README's "What moesim does not model" table stays true: every row's command is refused
// (exit 2) with the message the row quotes. A feature that becomes modelled fails this test
// until its row leaves the table.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

struct LimitRow {
  std::string feature, command, message;
};

// The text between the first two backticks of a table cell.
std::string code_of(const std::string& cell) {
  const std::size_t a = cell.find('`');
  const std::size_t b = a == std::string::npos ? a : cell.find('`', a + 1);
  return b == std::string::npos ? std::string() : cell.substr(a + 1, b - a - 1);
}

std::vector<LimitRow> limit_rows() {
  const std::string readme = test::slurp(test::source_path("README.md"));
  const std::size_t begin = readme.find("<!-- limits-table");
  const std::size_t end = readme.find("<!-- end limits-table -->");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::vector<LimitRow> rows;
  const std::string block = readme.substr(begin, end - begin);
  const std::regex row(R"(^\| ([^|]+) \| ([^|]+) \| ([^|]+) \|$)");
  std::size_t at = 0;
  while (at < block.size()) {
    std::size_t next = block.find('\n', at);
    if (next == std::string::npos) next = block.size();
    const std::string line = block.substr(at, next - at);
    at = next + 1;
    std::smatch m;
    if (!std::regex_match(line, m, row) || m[1].str() == "not modelled" || m[1].str().rfind("---", 0) == 0) continue;
    rows.push_back({m[1].str(), code_of(m[2].str()), code_of(m[3].str())});
  }
  return rows;
}

}  // namespace

TEST_CASE("every feature the README says is not modelled is refused with the quoted message", "[unit]") {
  const std::vector<LimitRow> rows = limit_rows();
  REQUIRE(rows.size() >= 8);
  for (const LimitRow& r : rows) {
    INFO(r.feature);
    REQUIRE(r.command.rfind("moesim ", 0) == 0);
    REQUIRE_FALSE(r.message.empty());
    const test::TempDir dir;
    std::string command = "cd ";
    command += test::source_path("");
    command += " && ";
    command += MOESIM_CLI;
    command += r.command.substr(6);
    command += " >";
    command += dir.path("out");
    command += " 2>";
    command += dir.path("err");
    const int status = std::system(command.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_THAT(test::slurp(dir.path("err")), Catch::Contains(r.message));
  }
}
