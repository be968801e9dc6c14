#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs
# them. See fuzz/README.md.
#   fuzz/run.sh [SECONDS] [TARGET...]     default: 600 s each, every target, two at a time
# The working corpus grows in build-fuzz/corpus/TARGET (seeded from fuzz/corpus/TARGET); a crash,
# hang (> 1 s per input) or sanitizer report leaves its input in fuzz/findings/TARGET/ and the
# log in build-fuzz/logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
targets=("$@")
# Every target by default: one per seed-corpus folder.
((${#targets[@]})) || for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
build_dir="${MOESIM_FUZZ_BUILD_DIR:-build-fuzz}"
parallel="${MOESIM_FUZZ_PARALLEL:-2}"

# clang and libFuzzer's runtime come from Debian's packages.
if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
fi
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
  -DMOESIM_FUZZ=ON -DMOESIM_SANITIZE=address,undefined > /dev/null
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

run_one() {
  local t="$1" seconds="$2" build_dir="$3"
  local corpus="$build_dir/corpus/$t" findings="fuzz/findings/$t" log="$build_dir/logs/$t.log"
  mkdir -p "$corpus" "$findings" "$build_dir/logs"
  local dict=()
  [ "$t" = plan_space ] || [ "$t" = nccl_tests ] || dict=(-dict=fuzz/json.dict)
  # -timeout: an input taking over 1 s is a hang; -rss_limit_mb: the 2-core, 24 GiB machines.
  local start=$SECONDS
  if "$build_dir/fuzz/fuzz_$t" "$corpus" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" \
      -timeout=1 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" > "$log" 2>&1; then
    status="no crash"
  else
    status="FINDING (see $log)"
  fi
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz_$t: $runs inputs in $((SECONDS - start)) s, $status"
}
export -f run_one
printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$build_dir"
