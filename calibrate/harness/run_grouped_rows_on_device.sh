#!/usr/bin/env bash
# The grouped_gemm group at several token counts, one measurements file each: the grouped-GEMM
# tables of a profile are keyed by rows per expert, and one shapes file routes one token count.
# With the default shapes (48 experts, top-4) TOKENS 192 384 1536 6144 49152 give 16, 32, 128,
# 512 and 4096 rows per expert (the default run_on_device.sh measures 16384 tokens: 1365).
#
#   bash calibrate/harness/run_grouped_rows_on_device.sh     # from the repository root, on the GPU
#
# Writes $OUT/measurements-grouped-t<TOKENS>.json and $OUT/grouped-rows.log. Overrides: TOKENS,
# ITERS (20), and what run_on_device.sh takes for its build (CUDA_HOME, BUILD_DIR, JOBS).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/calibrate-out}
BUILD=${BUILD_DIR:-/tmp/moesim-calibrate-build}
TOKENS=${TOKENS:-192 384 1536 6144 49152}
ITERS=${ITERS:-20}
mkdir -p "$OUT"
OUT="$OUT" BUILD_DIR="$BUILD" bash "$HERE/run_on_device.sh" --build-only || exit $?
"$BUILD/moesim-calibrate" --write-default-shapes "$BUILD/default-shapes.json" >/dev/null || exit 2
RC=0
for t in $TOKENS; do
  shapes="$BUILD/shapes-t$t.json"
  python3 - "$BUILD/default-shapes.json" "$shapes" "$t" <<'PY' || exit 2
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = f"{d.get('name', 'default')}-grouped-t{sys.argv[3]}"
d["grouped_gemm"]["tokens"] = int(sys.argv[3])
d["grouped_gemm"]["zipf_s"] = [0]  # the tables are fitted from uniform routing
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
  timeout -s INT -k 10 300 "$BUILD/moesim-calibrate" --only grouped_gemm --shapes "$shapes" --iters "$ITERS" \
    -o "$OUT/measurements-grouped-t$t.json" >>"$OUT/grouped-rows.log" 2>&1
  rc=$?
  echo "grouped_gemm at $t tokens: exit code $rc"
  [ $rc -eq 0 ] || RC=$rc
done
# shellcheck disable=SC2086  # TOKENS is a list of numbers, one argument each
python3 - "$OUT" $TOKENS <<'PY'
import json, sys
for t in sys.argv[2:]:
    try:
        d = json.load(open(f"{sys.argv[1]}/measurements-grouped-t{t}.json"))
    except (OSError, ValueError) as e:
        print(f"t={t}: no result ({e})"); continue
    for m in d["measurements"]:
        rows = sum(m["rows_per_expert"]) / len(m["rows_per_expert"])
        print(f"t={t:>6} rows/expert {rows:7.1f} {m['label']:22s} {m['method']:30s} {m['tflops']:7.1f} TFLOP/s {m['check']}")
PY
exit $RC
