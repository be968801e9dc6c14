// The event engine on hand-made graphs: stream order, collective synchronisation, bandwidth
// sharing and compute slowed beside communication.
#include <catch2/catch.hpp>

#include "sim/engine.hpp"

using namespace moesim;

namespace {
Task compute_task(std::uint32_t rank, double work) {
  Task t;
  t.rank = rank;
  t.work_s = work;
  return t;
}
Task comm_task(std::uint32_t rank, double work, std::uint32_t group) {
  Task t;
  t.rank = rank;
  t.stream = StreamKind::comm_dp;
  t.kind = TaskKind::collective;
  t.phase = PhaseTag::grad_sync;
  t.coll = CollectiveKind::all_reduce;
  t.work_s = work;
  t.group = group;
  return t;
}
}  // namespace

TEST_CASE("Two ranks: a collective starts when its last member is ready and slows compute beside it", "[golden]") {
  TaskGraph g(2);
  const TaskId a = g.add(compute_task(0, 1.0));  // rank 0: A [0, 1)
  const TaskId b = g.add(compute_task(1, 3.0));  // rank 1: B [0, 3)
  const std::uint32_t grp = g.new_group();
  const TaskId c0 = g.add(comm_task(0, 2.0, grp));
  const TaskId c1 = g.add(comm_task(1, 2.0, grp));
  g.depend(a, c0);
  g.depend(b, c1);
  const TaskId d = g.add(compute_task(0, 4.0));  // after A in stream order, beside C
  const ReplayResult r = replay(g, *fair_share(0.25));
  // C waits for B: [3, 5). D runs alone over [1, 3) (2 s of its 4 s of work), then at 1/1.25
  // of its rate while C runs (1.6 s of work in [3, 5)), then alone again: the last 0.4 s ends
  // at 5.4.
  CHECK(r.start[c0] == Approx(3.0));
  CHECK(r.start[c1] == Approx(3.0));
  CHECK(r.finish[c0] == Approx(5.0));
  CHECK(r.start[d] == Approx(1.0));
  CHECK(r.finish[d] == Approx(5.4));
  CHECK(r.makespan == Approx(5.4));
  CHECK(r.last == d);
  CHECK(r.cause[c0] == a);
}

TEST_CASE("Concurrent transfers on one link share its bandwidth", "[golden]") {
  TaskGraph g(1);
  Task x = comm_task(0, 1.0, g.new_group());
  Task y = comm_task(0, 1.0, g.new_group());
  y.stream = StreamKind::comm_ep;
  const TaskId ix = g.add(x);
  const TaskId iy = g.add(y);
  const ReplayResult r = replay(g, *fair_share(0));
  CHECK(r.finish[ix] == Approx(2.0));
  CHECK(r.finish[iy] == Approx(2.0));
}

TEST_CASE("Tasks on one stream run in order, equal times resolve deterministically", "[unit]") {
  TaskGraph g(1);
  const TaskId first = g.add(compute_task(0, 1.0));
  const TaskId second = g.add(compute_task(0, 0.0));
  const TaskId third = g.add(compute_task(0, 2.0));
  const ReplayResult r = replay(g, *fair_share(0));
  CHECK(r.finish[first] == Approx(1.0));
  CHECK(r.start[second] == Approx(1.0));
  CHECK(r.finish[third] == Approx(3.0));
  const ReplayResult again = replay(g, *fair_share(0));
  CHECK(again.start == r.start);
  CHECK(again.finish == r.finish);
}

TEST_CASE("A group whose members never become ready is reported, not hung", "[unit]") {
  TaskGraph g(2);
  const std::uint32_t grp = g.new_group();
  const TaskId c0 = g.add(comm_task(0, 1.0, grp));
  const TaskId c1 = g.add(comm_task(1, 1.0, grp));
  g.depend(c0, c1);  // c1 waits for c0, which waits for c1 to be ready: a deadlock
  CHECK_THROWS_WITH(replay(g, *fair_share(0)), Catch::Contains("replay stalled"));
}
