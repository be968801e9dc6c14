#!/usr/bin/env bash
# Browser test for the sweep page (CTest: html_renders_in_chromium). Writes pages with the CLI,
# opens each in headless Chromium with every network request refused, and checks from the DOM
# dump that every chart the page chose rendered to an <svg> and that no script error or
# console.error happened (the page records them in <body data-errors> and #page-errors).
#   usage: html_renders_in_chromium.sh MOESIM_BINARY SOURCE_DIR
# Exits 77 (CTest SKIP_RETURN_CODE) when no Chromium is installed; set MOESIM_CHROMIUM to use
# a particular browser binary. `./build.sh test` installs Debian's chromium.
set -euo pipefail

moesim="${1:?usage: $0 MOESIM_BINARY SOURCE_DIR}"
source_dir="${2:?usage: $0 MOESIM_BINARY SOURCE_DIR}"

browser="${MOESIM_CHROMIUM:-}"
if [ -z "$browser" ]; then
  for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then browser="$(command -v "$candidate")"; break; fi
  done
fi
if [ -z "$browser" ]; then
  echo "SKIP: no Chromium found (chromium, chromium-browser, google-chrome); install Debian's chromium to run this test"
  exit 77
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/moesim-chromium.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL [$1]: $2"
  failures=$((failures + 1))
}

# render NAME: loads $work/NAME.html, leaves the DOM in $work/NAME.dom and the log in NAME.log.
render() {
  local name="$1"
  local profile="$work/profile-$name"
  mkdir -p "$profile"
  # Virtual time lets the page finish its promises without real waiting; the proxy and
  # resolver rules make any network request fail, so a page that needs one shows an error.
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
    --disable-extensions --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 --virtual-time-budget=10000 \
    --dump-dom "file://$work/$name.html" >"$work/$name.dom" 2>"$work/$name.log" || true
}

# check NAME CHART...: the page drew exactly these charts, each with an <svg>, and no error.
check() {
  local name="$1"
  shift
  local dom="$work/$name.dom" before="$failures"
  if ! grep -q "<body" "$dom"; then
    fail "$name" "Chromium produced no DOM; its log follows"
    tail -n 30 "$work/$name.log"
    return
  fi
  local body
  body="$(grep -o -m1 '<body[^>]*>' "$dom" | sed -n 1p)"
  local charts rendered errors
  charts="$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' <<<"$body")"
  rendered="$(sed -n 's/.*data-rendered="\([0-9]*\)".*/\1/p' <<<"$body")"
  errors="$(sed -n 's/.*data-errors="\([0-9]*\)".*/\1/p' <<<"$body")"
  [ "$charts" = "$#" ] || fail "$name" "page chose ${charts:-no} charts, expected $# ($*): $body"
  [ "$rendered" = "$charts" ] || fail "$name" "${rendered:-0} of ${charts:-?} charts rendered: $body"
  [ "$errors" = "0" ] || fail "$name" "the page recorded ${errors:-?} error(s): $(grep -o '<pre id="page-errors"[^<]*' "$dom")"
  grep -q '<pre id="page-errors" hidden=""></pre>' "$dom" || fail "$name" "the error box is not empty and hidden"
  local chart section
  for chart in "$@"; do
    # The chart's <section>, from its data-chart attribute to its closing tag.
    section="$(awk -v c="data-chart=\"$chart\"" '{ t = t $0 "\n" } END {
      i = index(t, c); if (!i) exit; s = substr(t, i); j = index(s, "</section>"); print (j ? substr(s, 1, j) : s) }' "$dom")"
    if [ -z "$section" ]; then fail "$name" "no chart '$chart' on the page"; continue; fi
    grep -q "<svg" <<<"$section" || fail "$name" "chart '$chart' holds no <svg>"
    grep -q "<path\|<rect\|<line" <<<"$section" || fail "$name" "chart '$chart' drew no marks"
  done
  if grep -q "Uncaught" "$work/$name.log"; then fail "$name" "uncaught error in the console: $(grep -m3 Uncaught "$work/$name.log")"; fi
  local rows
  rows="$( { grep -o '<tr class="[^"]*" data-index=' "$dom" || true; } | wc -l)"
  [ "$rows" -gt 0 ] || fail "$name" "the table of points is empty"
  [ "$failures" -eq "$before" ] && echo "ok   [$name] $rendered chart(s) rendered ($*), $rows table rows"
  return 0
}

fig8="$source_dir/scenarios/fig8/moe-ddp.json"
# Figure 8a: MFU against global batch for two designs.
"$moesim" sweep "$fig8" --vary plan.batch.global_batch_tokens=128Ki..4Mi --vary design=ddp,fsdp --html "$work/batch.html" >/dev/null
# Figure 8b: MFU against routed experts, with DDP's OOM points.
"$moesim" sweep "$fig8" --vary architecture.moe.num_experts=8,32,48,64,128 --vary design=ddp,ddp+ep8,fsdp \
  --html "$work/experts.html" >/dev/null
# Invalid points (EP degree 3 divides nothing) next to valid ones.
"$moesim" sweep "$fig8" --vary plan.expert_parallel.degree=1,3,8 --html "$work/invalid.html" >/dev/null
# compare: a single design axis.
"$moesim" compare "$fig8" --design ddp --design fsdp --design ddp+ep8 --html "$work/compare.html" >/dev/null

for page in batch experts invalid compare; do render "$page" & done
wait
check batch mfu-vs-batch memory-by-class exposed-time
check experts mfu-vs-experts memory-by-class exposed-time
check invalid mfu-vs-degree memory-by-class exposed-time
check compare mfu-per-point memory-by-class exposed-time
grep -q '<td class="error" colspan=' "$work/invalid.dom" || fail invalid "an invalid point's error is not in the table"
grep -q '>OOM<' "$work/experts.dom" || fail experts "no OOM marker or verdict on the Figure 8b page"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed (browser: $browser)"
  exit 1
fi
echo "all pages rendered in $("$browser" --version 2>/dev/null | head -n1)"
