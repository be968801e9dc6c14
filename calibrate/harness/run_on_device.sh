#!/usr/bin/env bash
# One-call calibration run on a bare GPU machine: builds moesim-calibrate with a plain nvcc
# command line (no CMake, no JSON library needed), records `nvidia-smi -q`, then runs every
# measurement group within a total budget of about 7 minutes.
#
#   bash calibrate/harness/run_on_device.sh              # from the repository root
#   bash calibrate/harness/run_on_device.sh --build-only # compile check, no GPU needed
#
# Writes into $OUT (default ./calibrate-out): measurements-h200.json, calibrate.log (the run's
# output), build.log, nvidia-smi-q.txt, nvidia-smi-topo.txt. Environment overrides: CUDA_HOME,
# BUDGET_S (420), RESULT_NAME (measurements-h200.json), BUILD_DIR, JOBS (16), EXTRA_ARGS.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/calibrate-out}
BUILD=${BUILD_DIR:-/tmp/moesim-calibrate-build}
CUDA=${CUDA_HOME:-/usr/local/cuda}
BUDGET=${BUDGET_S:-420}
NAME=${RESULT_NAME:-measurements-h200.json}
JOBS=${JOBS:-16}
BUILD_ONLY=0
[ "${1:-}" = "--build-only" ] && BUILD_ONLY=1
mkdir -p "$OUT" "$BUILD"
NVCC="$CUDA/bin/nvcc"
command -v "$NVCC" >/dev/null 2>&1 || NVCC=$(command -v nvcc || true)
[ -n "$NVCC" ] || { echo "run_on_device: nvcc not found (CUDA_HOME=$CUDA)"; exit 10; }

# Candidate folders: the toolkit, the system, and Python wheels (nvidia-nccl-cu13 etc.).
SITE=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
INC_DIRS=("$CUDA/include" "$CUDA/targets/x86_64-linux/include" /usr/include /usr/local/include)
LIB_DIRS=("$CUDA/lib64" "$CUDA/lib" "$CUDA/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib)
for sp in $SITE /opt/torch/.venv/lib/python3*/site-packages; do
  for pkg in nccl cublas cu13 cuda_runtime; do
    INC_DIRS+=("$sp/nvidia/$pkg/include"); LIB_DIRS+=("$sp/nvidia/$pkg/lib")
  done
done
find_dir() { local f=$1; shift; for d in "$@"; do [ -e "$d/$f" ] && { echo "$d"; return 0; }; done; return 1; }
# Full path of libNAME.so, else of a versioned libNAME.so.N (wheels ship only those).
find_lib() {
  local n=$1 d f; shift
  for d in "$@"; do [ -e "$d/lib$n.so" ] && { echo "$d/lib$n.so"; return 0; }; done
  for d in "$@"; do for f in "$d"/lib"$n".so.[0-9]*; do [ -e "$f" ] && { echo "$f"; return 0; }; done; done
  return 1
}
NCCL_INC=$(find_dir nccl.h "${INC_DIRS[@]}") || { echo "run_on_device: nccl.h not found in: ${INC_DIRS[*]}"; exit 11; }
CUBLAS_INC=$(find_dir cublasLt.h "${INC_DIRS[@]}") || { echo "run_on_device: cublasLt.h not found"; exit 11; }
NCCL_SO=$(find_lib nccl "${LIB_DIRS[@]}") || { echo "run_on_device: libnccl not found in: ${LIB_DIRS[*]}"; exit 11; }
CUBLAS_SO=$(find_lib cublas "${LIB_DIRS[@]}") || { echo "run_on_device: libcublas not found"; exit 11; }
CUBLASLT_SO=$(find_lib cublasLt "${LIB_DIRS[@]}") || { echo "run_on_device: libcublasLt not found"; exit 11; }
echo "run_on_device: nvcc $("$NVCC" --version | tail -1)"
echo "run_on_device: nccl.h in $NCCL_INC, $NCCL_SO; cuBLAS $CUBLAS_SO"

GENCODE="-gencode arch=compute_90,code=sm_90"
# The list is read whole: `| grep -q` under pipefail can read as "absent" when nvcc gets SIGPIPE.
if [[ "$("$NVCC" --list-gpu-arch 2>/dev/null || true)" == *compute_100* ]]; then
  GENCODE="$GENCODE -gencode arch=compute_100,code=sm_100"
fi
# Compiles one source (run in xargs' shells, so it reads only exported scalars): C++20 host
# code, C++17 kernel files, as in CMakeLists.txt.
# shellcheck disable=SC2317,SC2086  # called through xargs; $GENCODE splits into flags on purpose
compile() {
  local src=$1 obj
  obj="$BUILD/$(basename "$src").o"
  local common=(-O3 -I"$HERE" "-DMOESIM_BUILD_KIND=\"nvcc\"") dir
  # A default system folder is never named: -isystem /usr/include breaks libstdc++'s #include_next.
  for dir in "$NCCL_INC" "$CUBLAS_INC"; do
    case "$dir" in /usr/include | /usr/local/include) ;; *) common+=(-isystem "$dir") ;; esac
  done
  case "$src" in
    *.cu) "$NVCC" -std=c++17 $GENCODE "${common[@]}" -Xcompiler=-Wall,-Wextra -c "$src" -o "$obj" ;;
    *) "$NVCC" -std=c++20 "${common[@]}" -Xcompiler=-Wall,-Wextra,-Wshadow -c "$src" -o "$obj" ;;
  esac
}
export -f compile
export NVCC BUILD HERE GENCODE NCCL_INC CUBLAS_INC
T0=$(date +%s)
rm -f "$BUILD"/*.o "$BUILD/moesim-calibrate"
# shellcheck disable=SC2016  # $1 expands in the child shell
printf '%s\n' "$HERE"/*.cu "$HERE"/*.cpp | xargs -P "$JOBS" -I{} bash -c 'compile "$1"' _ {} >"$OUT/build.log" 2>&1 \
  && "$NVCC" -o "$BUILD/moesim-calibrate" "$BUILD"/*.o "$CUBLASLT_SO" "$CUBLAS_SO" "$NCCL_SO" \
       -Xlinker -rpath -Xlinker "$(dirname "$NCCL_SO")" -Xlinker -rpath -Xlinker "$(dirname "$CUBLAS_SO")" >>"$OUT/build.log" 2>&1
BUILD_RC=$?
echo "run_on_device: build rc=$BUILD_RC in $(( $(date +%s) - T0 )) s (log: $OUT/build.log)"
grep -E "warning|error" "$OUT/build.log" | head -20
[ $BUILD_RC -eq 0 ] || { tail -40 "$OUT/build.log"; exit 12; }
[ $BUILD_ONLY -eq 1 ] && exit 0

nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1 || echo "run_on_device: nvidia-smi -q failed"
nvidia-smi topo -m >"$OUT/nvidia-smi-topo.txt" 2>&1 || true
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv

export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
LD_LIBRARY_PATH="$(dirname "$NCCL_SO"):$(dirname "$CUBLAS_SO")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# SIGINT at the budget's end plus a minute lets the harness stop and write; KILL 30 s later.
# shellcheck disable=SC2086  # EXTRA_ARGS holds several options
timeout -s INT -k 30 $((BUDGET + 60)) "$BUILD/moesim-calibrate" --budget-s "$BUDGET" -o "$OUT/$NAME" ${EXTRA_ARGS:-} \
  >"$OUT/calibrate.log" 2>&1
RC=$?
echo "run_on_device: moesim-calibrate exit code $RC"
grep -E "^moesim-calibrate|error|skipped" "$OUT/calibrate.log" | tail -15
python3 - "$OUT/$NAME" <<'PY' || tail -60 "$OUT/calibrate.log"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"status {d['status']}, {len(d['measurements'])} measurements, device {(d['environment'].get('device') or {}).get('name')}")
best = {}
for m in d["measurements"]:
    key = (m["kind"], m.get("label", ""))
    rate = m.get("busbw_GBps") or m.get("tflops") or m.get("GBps") or 0
    if rate >= best.get(key, (0, None))[0]:
        best[key] = (rate, m)
for (kind, label), (rate, m) in sorted(best.items()):
    size = m.get("bytes") or (f"{m['kernel_count']} kernels" if "kernel_count" in m else "x".join(str(m.get(k)) for k in ("m", "n", "k")))
    print(f"{kind:26s} {label[:26]:26s} {str(size):>14s} {m.get('median_us', 0):12.1f} us  best {rate:9.1f}  {m.get('check')}")
for m in (m for m in d["measurements"] if m["kind"] == "sequence"):
    print(f"sequence {m['label']}: {m['median_us']:.1f} us whole, {m.get('kernels_sum_median_us')} us kernels alone summed, "
          f"per phase {m.get('phase_sum_median_us')} (attention kernels not included)")
comm = {}
for m in (m for m in d["measurements"] if m["kind"] == "interference_comm" and m.get("slowdown")):
    comm.setdefault(f"{m['collective']} {m['dtype']}", []).append(m["slowdown"])
if comm:
    print("collective beside compute, median time ratio: " +
          ", ".join(f"{k} x{sorted(v)[len(v) // 2]:.3f} ({len(v)})" for k, v in sorted(comm.items())))
bad = [m for m in d["measurements"] if m.get("check") == "failed"]
print(f"checks failed: {len(bad)}")
PY
# The failure path, on the real libraries: a forced NCCL error inside the second group must leave
# the first group's measurements written, the failing call and measurement named, exit code 1.
timeout -s INT -k 10 120 "$BUILD/moesim-calibrate" --quick --only allreduce,allgather \
  --inject-failure nccl:all_gather -o "$OUT/injected-failure.json" >"$OUT/injected-failure.log" 2>&1
FAIL_RC=$?
python3 - "$OUT/injected-failure.json" "$FAIL_RC" <<'PY2' || tail -20 "$OUT/injected-failure.log"
import json, sys
d = json.load(open(sys.argv[1]))
kinds = sorted({m["kind"] for m in d["measurements"]})
ok = sys.argv[2] == "1" and d["status"] == "failed" and "all_gather" in (d.get("error") or "") and "all_reduce" in kinds
print(f"injected NCCL failure: exit {sys.argv[2]}, status {d['status']}, {len(d['measurements'])} measurements kept "
      f"({', '.join(kinds)}), error: {d.get('error')}\n  -> {'as designed' if ok else 'NOT as designed'}")
PY2
exit $RC
