#!/usr/bin/env bash
# moesim sweep under `mpirun -np 2` must write byte-identical JSON, CSV and text to one process
# (with seeded random routing, so that the seed, not luck, makes the runs agree).
set -euo pipefail
moesim="$1" mpiexec="$2" src="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scenario="$src/scenarios/fig8/fig8a.json"
"$moesim" sweep "$scenario" --vary architecture.moe.num_experts=8,48 --set plan.routing.model=random -j 1 \
  --json "$work/one.json" --csv "$work/one.csv" >"$work/one.txt" 2>/dev/null
# Root may run the test in CI containers; OpenMPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# In the sanitized build, OpenMPI's plugins leak at exit and are unloaded before LeakSanitizer
# reports, so they cannot be suppressed by name: leak checks are off for the MPI ranks only
# (the single-process run above keeps them for moesim's own code).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
"$mpiexec" --oversubscribe -np 2 "$moesim" sweep "$scenario" --vary architecture.moe.num_experts=8,48 --set plan.routing.model=random -j 1 \
  --json "$work/two.json" --csv "$work/two.csv" >"$work/two.txt" 2>"$work/two.err" || { cat "$work/two.err"; exit 1; }
grep -q "rank 1" "$work/two.err" || { echo "mpirun did not start a second rank"; cat "$work/two.err"; exit 1; }
cmp "$work/one.json" "$work/two.json"
cmp "$work/one.csv" "$work/two.csv"
cmp "$work/one.txt" "$work/two.txt"
echo "mpi sweep: 2 ranks, $(grep -c '"index"' "$work/two.json") points, identical to one process"
