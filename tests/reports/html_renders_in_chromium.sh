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
  # 1280 px wide: the width the page and its table must fit (data-page-overflow, data-table-overflow).
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --window-size=1280,1000 \
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
    # (perl reads the dump whole: a 2,000-point page's is several MB on a few long lines)
    section="$(perl -0777 -ne 'BEGIN { $c = shift @ARGV } print $1 if /(data-chart="\Q$c\E".*?<\/section>)/s' \
      "$chart" "$dom")"
    if [ -z "$section" ]; then fail "$name" "no chart '$chart' on the page"; continue; fi
    grep -q "<svg" <<<"$section" || fail "$name" "chart '$chart' holds no <svg>"
    grep -q "<path\|<rect\|<line" <<<"$section" || fail "$name" "chart '$chart' drew no marks"
  done
  if grep -q "Uncaught" "$work/$name.log"; then fail "$name" "uncaught error in the console: $(grep -m3 Uncaught "$work/$name.log")"; fi
  local rows overflow
  rows="$( { grep -o '<tr class="[^"]*" data-index=' "$dom" || true; } | wc -l)"
  [ "$rows" -gt 0 ] || fail "$name" "the table of points is empty"
  for overflow in page-overflow table-overflow; do
    local px
    px="$(sed -n "s/.*data-$overflow=\"\([0-9]*\)\".*/\1/p" <<<"$body")"
    [ "$px" = "0" ] || fail "$name" "at 1280 px the ${overflow%-overflow} overflows by ${px:-?} px (data-$overflow): $body"
  done
  # No chart wider than its card, no two axis or legend labels whose boxes overlap (page.js
  # measures both from the rendered SVG's boxes).
  local wide overlaps
  wide="$(sed -n 's/.*data-wide-charts="\([0-9]*\)".*/\1/p' <<<"$body")"
  overlaps="$(sed -n 's/.*data-label-overlaps="\([0-9]*\)".*/\1/p' <<<"$body")"
  [ "$wide" = "0" ] || fail "$name" "${wide:-?} chart(s) wider than their card: $(grep -o '<section class="chart"[^>]*data-wide[^>]*>' "$dom")"
  [ "$overlaps" = "0" ] || fail "$name" "${overlaps:-?} overlapping labels: $(grep -o '<section class="chart"[^>]*>' "$dom")"
  [ "$failures" -eq "$before" ] && echo "ok   [$name] $rendered chart(s) rendered ($*), $rows table rows"
  return 0
}

# marks NAME CHART MARK: how many items the chart's Vega mark group MARK drew (the SVG renderer
# gives a layer named MARK the class MARK_marks; symbols are <path>, rules <line>, text <text>).
marks() {
  perl -0777 -ne 'BEGIN { ($c, $m) = splice(@ARGV, 0, 2) }
    my $n = 0;
    if (/data-chart="\Q$c\E"(.*?)<\/section>/s) {
      my $section = $1;
      while ($section =~ /<g class="mark-\w+ role-mark \Q$m\E_marks"[^>]*>(.*?)<\/g>/sg) {
        my $group = $1; $n += () = $group =~ /<(path|line|text|rect)\b/g;
      }
    }
    print $n' "$2" "$3" "$work/$1.dom"
}

# expect_marks NAME CHART MARK COUNT WHAT
expect_marks() {
  local got
  got="$(marks "$1" "$2" "$3")"
  [ "$got" = "$4" ] || fail "$1" "chart '$2' drew ${got:-no} $5 ($3), expected $4"
}

# expect_rows NAME CLASS COUNT: rows of that class in the page's tables.
expect_rows() {
  local got
  got="$( { grep -o "<tr class=\"$2\"" "$work/$1.dom" || true; } | wc -l)"
  [ "$got" -eq "$3" ] || fail "$1" "$got table row(s) of class $2, expected $3"
}

fig8="$source_dir/scenarios/fig8/moe-ddp.json"
# Figure 8a: MFU against global batch for two designs.
"$moesim" sweep "$fig8" --vary plan.batch.global_batch_tokens=128Ki..4Mi --vary design=ddp,fsdp --html "$work/batch.html" >/dev/null
# Figure 8b: MFU against routed experts, with DDP's OOM points.
"$moesim" sweep "$fig8" --vary architecture.moe.num_experts=8,32,48,64,128 --vary design=ddp,ddp+ep8,fsdp \
  --html "$work/experts.html" >/dev/null
# Invalid points (EP degree 3 divides nothing) next to valid ones.
"$moesim" sweep "$fig8" --vary plan.expert_parallel.degree=1,3,8 --html "$work/invalid.html" >/dev/null
# compare: a single design axis, with its crossovers and walls.
"$moesim" compare "$fig8" --design fsdp --design ddp --design ddp+ep8 --html "$work/compare.html" >/dev/null
# The seed's Figure 8b scenario itself: its dense references are included points.
"$moesim" sweep "$source_dir/scenarios/fig8/fig8b.json" --html "$work/fig8b.html" >/dev/null

# Pages that scale: 20 and 2,000 points (expert counts x four designs) and 192 points in 48
# series (six designs x four batches over eight expert counts). Each must fit its cards with no
# overlapping labels; the bar charts draw at most 48 points, the line charts 20 series and the
# table 100 rows a page.
"$moesim" sweep "$fig8" --vary architecture.moe.num_experts=8..40+8 --vary design=ddp,fsdp,ddp+ep8,zero2 \
  --html "$work/scale20.html" >/dev/null 2>&1
"$moesim" sweep "$fig8" --vary architecture.moe.num_experts=8..4000+8 --vary design=ddp,fsdp,ddp+ep8,zero2 \
  --html "$work/scale2000.html" >/dev/null 2>&1
"$moesim" sweep "$fig8" --vary architecture.moe.num_experts=8..64+8 \
  --vary design=ddp,fsdp,ddp+ep8,zero2,ddp+ep8+nodistopt,fsdp+ep8 --vary plan.batch.global_batch_tokens=512Ki..4Mi \
  --html "$work/series.html" >/dev/null 2>&1

# Two browsers at a time: more only thrash a 2-core machine.
# A plan page of thousands of candidates (6,000 on 256 GPUs).
"$moesim" plan "$source_dir/scenarios/fig8/moe-ddp-ep8.json" --gpus 256 -j 2 --html "$work/plan.html" >/dev/null 2>&1

for page in batch experts invalid compare fig8b scale20 scale2000 series plan; do
  render "$page" &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
done
wait
check batch mfu-vs-batch memory-by-class exposed-time
check experts mfu-vs-experts memory-by-class exposed-time
check invalid mfu-vs-degree memory-by-class exposed-time
check compare mfu-per-point batch-crossover memory-by-class exposed-time
check fig8b mfu-vs-experts memory-by-class exposed-time
grep -q '<td class="error" colspan=' "$work/invalid.dom" || fail invalid "an invalid point's error is not in the table"
for page in scale20 scale2000; do check "$page" mfu-vs-experts memory-by-class exposed-time; done
check series mfu-vs-batch mfu-vs-experts memory-by-class exposed-time
expect_rows scale2000 "" 100
grep -q '>rows 1–100 of 2000<' "$work/scale2000.dom" || fail scale2000 "the table's pager does not say rows 1-100 of 2000"
grep -q 'The 48 points of the 2000 simulated with the best MFU' "$work/scale2000.dom" ||
  fail scale2000 "the bar charts do not say they draw 48 of 2000 points"
grep -q 'The 20 series of the 48 with the best MFU' "$work/series.dom" || fail series "the chart does not say it draws 20 of 48 series"
# The plan page: its chart rendered without an error, the table of every candidate paged, the
# memory-pruned plans far past the capacity counted rather than drawn.
plan_body="$(grep -o -m1 '<body[^>]*>' "$work/plan.dom" || true)"
grep -q 'data-rendered="1"' <<<"$plan_body" || fail plan "the frontier chart did not render: $plan_body"
grep -q 'data-errors="0"' <<<"$plan_body" || fail plan "the page recorded an error: $plan_body"
grep -q '>rows 1–100 of [0-9]*<' "$work/plan.dom" || fail plan "the table of every candidate is not paged"
grep -q 'memory-pruned plan(s) above [0-9]* GiB per GPU are not drawn' "$work/plan.dom" ||
  fail plan "the chart does not count the memory-pruned plans it leaves out"
# The page fits 1280 px, the chart its card, and no two labels overlap: axis and legend labels,
# and the top K's rank labels (plans close on the chart drew theirs over each other: two pairs of
# this page's did before the page moved them apart).
for attr in page-overflow wide-charts label-overlaps; do
  px="$(sed -n "s/.*data-$attr=\"\([0-9]*\)\".*/\1/p" <<<"$plan_body")"
  [ "$px" = "0" ] || fail plan "data-$attr is ${px:-missing}, expected 0: $plan_body"
done
labels="$(( $(marks plan frontier top_labels) + $(marks plan frontier top_labels_below) ))"
[ "$labels" -eq 5 ] || fail plan "the chart labelled $labels of the top 5 plans"
# Screenshots of the pages that scale, kept where MOESIM_TEST_ARTIFACTS points (CTest sets it
# under the build's Testing folder), for a person to look at.
if [ -n "${MOESIM_TEST_ARTIFACTS:-}" ]; then
  mkdir -p "$MOESIM_TEST_ARTIFACTS"
  for page in scale2000; do
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --window-size=1280,2600 --hide-scrollbars \
      --user-data-dir="$work/shot-$page" --virtual-time-budget=10000 --proxy-server=127.0.0.1:9 \
      --screenshot="$MOESIM_TEST_ARTIFACTS/sweep-$page.png" "file://$work/$page.html" >/dev/null 2>&1 || true
  done
fi

# Published measurements (scenarios/validation/seed.json) on the points that simulate the same
# runs. Figure 8a: DDP and FSDP at 128Ki and 4Mi, each labelled with its value.
expect_marks batch mfu-vs-batch published 4 "published points"
expect_marks batch mfu-vs-batch published_labels 4 "published labels"
grep -q '>41.4%<' "$work/batch.dom" || fail batch "the published 4Mi DDP point is not labelled 41.4%"
expect_marks batch mfu-vs-batch oom 0 "OOM markers"
# Figure 8b: DDP+EP8 and FSDP at N=128, DDP and FSDP at N=48 (Figure 8a's 4Mi points), the
# DDP+EP8 42-44% band over its five points, the seven published OOM verdicts; DDP does not fit
# at N=128, marked OOM in every chart (N=64 fits under the caching-allocator replay: the
# validation record's documented gap, published as OOM).
for page in experts fig8b; do
  expect_marks "$page" mfu-vs-experts published 4 "published points"
  expect_marks "$page" mfu-vs-experts published_band 5 "published band bars"
  expect_marks "$page" memory-by-class published_verdict 7 "published OOM verdicts"
  for chart in mfu-vs-experts memory-by-class exposed-time; do expect_marks "$page" "$chart" oom 1 "OOM markers"; done
done
grep -q '>42.1%<' "$work/experts.dom" || fail experts "the published N=128 DDP+EP8 point is not labelled 42.1%"
# The dense references: simulated (dashed) and published (dotted, 51.1% and 49.8%).
expect_marks fig8b mfu-vs-experts reference 2 "dense reference lines"
expect_marks fig8b mfu-vs-experts published_reference 2 "published dense references"
grep -q 'ddp · olmo-ddp-bench-dense: simulated [0-9.]*%, published 51.1%' "$work/fig8b.dom" ||
  fail fig8b "no label giving the dense DDP reference's published 51.1%"
# The comparison page: titled so, with its two crossovers and three walls, the probes chart,
# and Figure 8a's published 4Mi points on the DDP and FSDP bars.
grep -q '<title>moesim comparison: ' "$work/compare.dom" || fail compare "not titled as a comparison"
grep -q '<section id="comparison">' "$work/compare.dom" || fail compare "the crossovers and walls section is hidden"
expect_rows compare crossover 2
expect_rows compare wall 3
grep -q '>256Ki tokens<' "$work/compare.dom" || fail compare "the DDP vs FSDP crossover (256Ki) is not shown"
expect_marks compare batch-crossover crossover 2 "crossover rules"
expect_marks compare mfu-per-point published 2 "published points"
grep -q '<section id="comparison" hidden' "$work/batch.dom" || fail batch "a plain sweep shows a comparison section"
[ "$failures" -eq 0 ] && echo "ok   published points, bands, verdicts and dense references, OOM markers, crossovers and walls counted"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed (browser: $browser)"
  exit 1
fi
echo "all pages rendered in $("$browser" --version 2>/dev/null | head -n1)"
