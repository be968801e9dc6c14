#!/usr/bin/env bash
# One entry point for the README's two commands.
#   ./build.sh main   install what is missing (apt-get), build Release, run the main job
#                     (MOESIM_PGO=1: a profile-guided build, trained on pgo_train's commands)
#   ./build.sh test   install what is missing, build, run the whole test suite
#   ./build.sh sanitize   the same test suite on an AddressSanitizer + UBSan build (build-asan/)
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-main}"
build_dir="${MOESIM_BUILD_DIR:-build}"
jobs="${MOESIM_JOBS:-$(nproc)}"
pgo_stage=""  # MOESIM_PGO's stage for configure_and_build: generate, use, or empty

# Debian packages the build needs (see README "Dependencies").
packages=(g++ cmake make libboost-graph-dev nlohmann-json3-dev libcli11-dev libeigen3-dev catch2 libmimalloc-dev)
# Test modes only: headless Chromium (and a font for chart text) for the html_renders_in_chromium
# test, OpenMPI for the MPI sweep test and valgrind for the memcheck test; each test is skipped
# where its tool is missing.
test_packages=(chromium fonts-liberation libopenmpi-dev openmpi-bin valgrind)

# Each phase on one line with its elapsed time, so a slow step is easy to see.
phase() {
  local name="$1" start=$SECONDS
  shift
  echo "build.sh: ${name}..."
  "$@"
  echo "build.sh: ${name} done in $((SECONDS - start)) s"
}

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "build.sh: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

configure_and_build() {
  # MOESIM_WERROR=ON (set by .ci/run) makes every warning an error. MOESIM_PGO is passed every
  # time: a build directory keeps its cache, and a plain build after a profile-guided one is plain.
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING="$1" -DMOESIM_WERROR="${MOESIM_WERROR:-OFF}" \
    -DMOESIM_PGO="$pgo_stage" "${@:2}"
  cmake --build "$build_dir" -j "$jobs"
}

# The main job: reports in $1, sweeps and the comparison with $2 threads (the default: all cores).
main_job() {
  local out="$1" threads=()
  [ -z "${2:-}" ] || threads=(-j "$2")
  local moesim="$build_dir/cli/moesim"
  # The seed's Figure 8 panels on the bundled B300 profile: JSON, CSV and an HTML page each.
  "$moesim" sweep scenarios/fig8/fig8a.json "${threads[@]}" --json "$out/fig8a.json" --csv "$out/fig8a.csv" \
    --html "$out/fig8a.html"
  echo
  "$moesim" sweep scenarios/fig8/fig8b.json "${threads[@]}" --json "$out/fig8b.json" --csv "$out/fig8b.csv" \
    --html "$out/fig8b.html"
  echo
  # DDP vs FSDP before a run: side by side, batch crossover, expert-count memory walls.
  "$moesim" compare scenarios/fig8/fig8b.json "${threads[@]}" --json "$out/compare-fig8b.json" \
    --html "$out/compare-fig8b.html"
  echo
  # The report's N=64 DDP point (its memory wall: docs/memory-ledger.md, Figure 8b), and predicted
  # vs published on the report's dataset.
  "$moesim" ledger scenarios/fig8/moe-ddp.json --set architecture.moe.num_experts=64 --json "$out/ledger-fig8-n64-ddp.json"
  echo
  "$moesim" validate --json "$out/validation-seed.json"
}

# What the profile-guided build is trained on: the main job, a plan search and a 4096-GPU
# pipeline step, one thread each (the instrumented counters are not atomic). Not the benchmarks'
# repeat loops.
pgo_train() {
  local tmp
  tmp="$(mktemp -d)"
  main_job "$tmp" 1
  "$build_dir/cli/moesim" plan scenarios/fig8/moe-ddp-ep8.json --gpus 64 -j 1
  "$build_dir/cli/moesim" simulate scenarios/bench/moe64-4096gpu-ddp-ep8-pp8.json --json "$tmp/s.json"
  rm -rf "$tmp"
}

# Two builds in one directory (the profile names each object by its path): instrumented, trained,
# then rebuilt with the fresh profile.
pgo_build() {
  local profile="$build_dir/pgo-profile"
  [[ "$profile" = /* ]] || profile="$PWD/$profile"
  rm -rf "$profile"
  pgo_stage=generate configure_and_build OFF -DMOESIM_PGO_DIR="$profile"
  echo "build.sh: training the profile-guided build"
  pgo_train > /dev/null
  pgo_stage=use configure_and_build OFF -DMOESIM_PGO_DIR="$profile"
}

case "$mode" in
  main)
    phase "install packages" install_missing
    if [ "${MOESIM_PGO:-0}" = 1 ]; then phase "profile-guided build" pgo_build; else phase "build" configure_and_build OFF; fi
    mkdir -p out
    phase "main job" main_job out
    echo "build.sh: reports in out/"
    ;;
  test)
    packages+=("${test_packages[@]}")
    phase "install packages" install_missing
    # The units `main` built are not compiled again: only the tests are added (MPI, found once
    # OpenMPI is installed, changes one file: cli/CMakeLists.txt).
    phase "build with tests" configure_and_build ON
    phase "tests" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
    ;;
  sanitize)
    packages+=("${test_packages[@]}")
    phase "install packages" install_missing
    build_dir="${MOESIM_BUILD_DIR:-build-asan}"
    phase "sanitized build" configure_and_build ON -DMOESIM_SANITIZE=address,undefined
    # Any report fails its test. The browser test renders the same pages the test build's run
    # already rendered (Chromium's own code is not instrumented): it runs once, there.
    export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    phase "sanitized tests" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -LE browser
    ;;
  *)
    echo "usage: ./build.sh main|test|sanitize" >&2
    exit 2
    ;;
esac
