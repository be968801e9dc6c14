#!/usr/bin/env bash
# The main commands under valgrind memcheck on one scenario: no invalid read or write, no use of
# uninitialised values, no leak. Skipped (exit 77) where valgrind is not installed.
set -euo pipefail
moesim="$1" src="$2"
command -v valgrind >/dev/null || { echo "valgrind not installed: skipped"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scenario="$src/scenarios/fig8/moe-ddp-ep8.json"
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --track-origins=yes)
# An executable linked with mimalloc (cli/CMakeLists.txt): memcheck takes over mimalloc's malloc
# family as it does libc's, so that it still sees every block. mimalloc serves new[], delete[] and
# free from one entry point, which memcheck then takes for mismatched pairs: that one check is left
# to the sanitized build (ASan's alloc_dealloc_mismatch, .ci/run).
# (ldd's output is read whole: `grep -q` would exit at the match, and under pipefail the SIGPIPE
# that ldd may then get would read as "no mimalloc" now and then.)
if [[ "$(ldd "$moesim")" == *libmimalloc* ]]; then
  vg+=(--soname-synonyms=somalloc=libmimalloc.so* --show-mismatched-frees=no)
fi
run() {
  echo "valgrind moesim $*"
  "${vg[@]}" "$moesim" "$@" >"$work/stdout" 2>"$work/stderr" || {
    rc=$?; cat "$work/stderr"; echo "FAILED (exit $rc): moesim $*"; exit 1; }
}
run ledger "$scenario" --json "$work/ledger.json"
run inventory "$scenario" --json "$work/inventory.json"
run simulate "$scenario" --set plan.routing.model=random --json "$work/step.json" --trace "$work/trace.json"
run sweep "$scenario" --vary design=ddp+ep8,fsdp -j 2 --json "$work/sweep.json" --csv "$work/sweep.csv" --html "$work/sweep.html"
run compare "$scenario" --set plan.batch.global_batch_tokens=1048576 --design fsdp --design ddp+ep8 -j 2 --json "$work/compare.json"
run cost collective --profile "$src/hardware_profiles/b300-hgx.json" --kind all_reduce --bytes 1GiB --ranks 8 --json "$work/cost.json"
run import nccl-tests "$src/tests/data/calibrate/synthetic-all_reduce_perf-8xh200.log" -o "$work/imported.json"
# Bad input: the error path (exit 2, no output file) is clean too.
"${vg[@]}" "$moesim" ledger "$scenario" --set plan.expert_parallel.degree=5 --json "$work/bad.json" >/dev/null 2>"$work/stderr" && exit 1
rc=$?
[ "$rc" -eq 2 ] || { cat "$work/stderr"; echo "bad input: expected exit 2 under valgrind, got $rc"; exit 1; }
[ ! -e "$work/bad.json" ]
echo "valgrind: 8 commands clean"
