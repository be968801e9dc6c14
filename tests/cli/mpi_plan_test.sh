#!/usr/bin/env bash
# moesim plan under `mpirun -np 2` must write byte-identical JSON, CSV and listing to one process:
# the ranks split each batch of screening and replay work and all-gather the results.
set -euo pipefail
moesim="$1" mpiexec="$2" src="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scenario="$src/scenarios/fig8/moe-ddp-ep8.json"
args=(plan "$scenario" --gpus 8 --set architecture.moe.num_experts=8 --set plan.routing.model=random
      --global-batch 256Ki --search microbatch=1,2 --search recompute=none,full --top 3 -j 1)
"$moesim" "${args[@]}" --json "$work/one.json" --csv "$work/one.csv" >"$work/one.txt"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Leak checks off for the MPI ranks only (see mpi_sweep_test.sh).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
"$mpiexec" --oversubscribe -np 2 "$moesim" "${args[@]}" --json "$work/two.json" --csv "$work/two.csv" \
  >"$work/two.txt" 2>"$work/two.err" || { cat "$work/two.err"; exit 1; }
grep -q "split over 2 MPI ranks" "$work/two.err" || { echo "mpirun did not start a second rank"; cat "$work/two.err"; exit 1; }
cmp "$work/one.json" "$work/two.json"
cmp "$work/one.csv" "$work/two.csv"
cmp "$work/one.txt" "$work/two.txt"
echo "mpi plan: 2 ranks, identical to one process ($(grep -c . "$work/two.csv") CSV lines)"
