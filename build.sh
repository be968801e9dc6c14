#!/usr/bin/env bash
# One entry point for the README's two commands.
#   ./build.sh main   install what is missing (apt-get), build Release, run the main job
#   ./build.sh test   install what is missing, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-main}"
build_dir="${MOESIM_BUILD_DIR:-build}"
jobs="${MOESIM_JOBS:-$(nproc)}"

# Debian packages the build needs (see README "Dependencies").
packages=(g++ cmake make libboost-graph-dev nlohmann-json3-dev libcli11-dev libeigen3-dev catch2)
# Test mode only: headless Chromium (and a font for chart text) for the html_renders_in_chromium
# test, which is skipped where no Chromium is installed.
test_packages=(chromium fonts-liberation)

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
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING="$1"
  cmake --build "$build_dir" -j "$jobs"
}

case "$mode" in
  main)
    install_missing
    configure_and_build OFF
    mkdir -p out
    # The seed's Figure 8 model (N=48) under the three designs; then the N=64 memory wall.
    for design in ddp ddp-ep8 fsdp; do
      "$build_dir/cli/moesim" ledger "scenarios/fig8/moe-$design.json" --json "out/ledger-fig8-moe-$design.json"
      echo
    done
    "$build_dir/cli/moesim" ledger scenarios/fig8/moe-ddp.json --set architecture.moe.num_experts=64 \
      --json out/ledger-fig8-moe-ddp-n64.json
    echo "build.sh: JSON reports in out/"
    ;;
  test)
    packages+=("${test_packages[@]}")
    install_missing
    configure_and_build ON
    ctest --test-dir "$build_dir" --output-on-failure
    ;;
  *)
    echo "usage: ./build.sh main|test" >&2
    exit 2
    ;;
esac
