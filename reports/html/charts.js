// Vega-Lite specs for the moesim sweep page, chosen from the axes the sweep has. Every chart
// reads only the rows built here from the embedded moesim-sweep/1 document (see page.js).
// Shared pieces (rows, names, published and OOM marks) are in charts_marks.js, loaded first.
"use strict";

var moesimCharts = (function () {
  var M = moesimMarks;
  var BATCH = M.BATCH, EXPERTS = M.EXPERTS, PUBLISHED = M.PUBLISHED, PUBLISHED_TOOLTIP = M.PUBLISHED_TOOLTIP;
  var OOM_RED = M.OOM_RED, REFERENCE = M.REFERENCE, shortName = M.shortName, percent = M.percent, tokens = M.tokens;
  var labelOf = M.labelOf, publishedData = M.publishedData, publishedLayers = M.publishedLayers;
  var oomLayer = M.oomLayer, oomWhy = M.oomWhy, isNumericAxis = M.isNumericAxis;
  // Ledger classes in stacking order (models/memory/ledger.hpp), then what sits on top of the
  // allocator's view: fragmentation (reserved - allocated) and runtime reserves (CUDA context,
  // NCCL, library workspaces; device total - reserved).
  var MEMORY_CLASSES = [
    ["compute_weights", "#1f4e79"], ["grad_buffers", "#2e75b6"], ["main_weights", "#5b9bd5"],
    ["optimizer_states", "#9dc3e6"], ["activations", "#c55a11"], ["activation_grads", "#f4b183"],
    ["logits_loss", "#bf9000"], ["weight_grad_transient", "#ffd966"], ["fsdp_materialized", "#548235"],
    ["fsdp_grad_unsharded", "#a9d18e"], ["ep_comm_buffers", "#7030a0"], ["cp_comm_buffers", "#b4a7d6"], ["optimizer_transients", "#c9a0dc"],
    ["weight_rebuild", "#f4b183"], ["quantized_operands", "#b4c7e7"], ["allocator_fragmentation", "#a6a6a6"], ["runtime_reserves", "#595959"]];
  // Critical-rank time in the order sim/task_graph.hpp lists the phases, then idle.
  var PHASES = [
    ["forward", "#1f4e79"], ["backward", "#2e75b6"], ["recompute", "#9dc3e6"], ["grad_accumulate", "#bf9000"],
    ["optimizer", "#ffd966"], ["fsdp_gather", "#548235"], ["fsdp_reduce_scatter", "#a9d18e"], ["grad_sync", "#c55a11"],
    ["weight_rebuild", "#f4b183"], ["ep_dispatch", "#7030a0"], ["ep_combine", "#c9a0dc"], ["pp_p2p", "#833c0b"], ["tp_comm", "#00b0a0"], ["cp_comm", "#70d0c0"],
    ["offload", "#a5a5a5"], ["rerun", "#c00000"], ["paged_stash", "#ff7f7f"], ["idle / bubble", "#bfbfbf"]];


  // A line per series reads up to MAX_SERIES of them: past that, the series with the best MFU.
  // The legend lists them in natural order (numbers by value: 8, 16, 128).
  var MAX_SERIES = 20;
  var MAX_TICKS = 16;
  function pickSeries(points) {
    var best = {};
    points.forEach(function (p) { best[p.series] = Math.max(best[p.series] || 0, p.oom ? 0 : p.mfu); });
    var all = Object.keys(best);
    var shown = all.length <= MAX_SERIES ? all : all.slice().sort(function (a, b) { return best[b] - best[a]; }).slice(0, MAX_SERIES);
    shown.sort(function (a, b) { return a.localeCompare(b, "en", { numeric: true }); });
    return { shown: shown, total: all.length };
  }

  function mfuPoint(m, row, x) {
    var r = row.result;
    var series = labelOf(m.axes, row.values, x) || r.design;
    return {
      x: row.values[x], series: series, label: row.label, mfu: r.mfu, oom: !!r.oom,
      step_ms: r.step_time_s * 1e3, tokens_per_s_per_gpu: r.tokens_per_s_per_gpu,
      device_GiB: r.device_total_GiB, capacity_GiB: r.capacity_GiB, breaking_phase: r.breaking_phase, result: r
    };
  }

  // MFU against one numeric axis, a line per remaining-axes combination (per design when the
  // other axis is the design). Points that do not fit are drawn as crosses on the zero line and
  // marked OOM; published measurements of the same runs are hollow diamonds with their values
  // (a published band is a shaded bar); points without this axis (a sweep's included dense
  // models) are dashed reference lines across the chart, with their published values dotted.
  function mfuVersus(m, x) {
    var on = m.ok.filter(function (r) { return x in r.values; });
    var points = on.map(function (r) { return mfuPoint(m, r, x); });
    var picked = pickSeries(points);
    // The x axis spans the points that fit and a quarter more: out-of-memory points beyond are
    // counted in the caption, not drawn (a sweep far past the memory wall would bury the rest).
    var fitX = points.filter(function (p) { return !p.oom; }).map(function (p) { return p.x; });
    var beyond = 0;
    if (fitX.length && typeof fitX[0] === "number" && x !== BATCH) {
      var limit = Math.max.apply(null, fitX) * 1.25;
      beyond = points.filter(function (p) { return p.oom && p.x > limit; }).length;
      points = points.filter(function (p) { return !(p.oom && p.x > limit); });
      on = on.filter(function (r) { return !(r.result.oom && r.values[x] > limit); });
    }
    points = points.filter(function (p) { return picked.shown.indexOf(p.series) >= 0; });
    on = on.filter(function (r) { return picked.shown.indexOf(labelOf(m.axes, r.values, x) || r.result.design) >= 0; });
    var fits = points.filter(function (p) { return !p.oom; });
    var ooms = points.filter(function (p) { return p.oom; }).map(function (p) { return Object.assign(p, { zero: 0 }); });
    var batch = x === BATCH;
    // Ticks at the swept values while they can be read; past that, Vega's own ticks.
    var swept = m.axes.filter(function (a) { return a.path === x; })[0].values.slice();
    var axis = swept.length <= MAX_TICKS ? { values: swept } : { labelOverlap: "greedy" };
    if (batch) axis.labelExpr = "datum.value >= 1048576 ? datum.value / 1048576 + 'Mi' : datum.value / 1024 + 'Ki'";
    var xEnc = {
      field: "x", type: "quantitative", title: batch ? "global batch (tokens, log2 scale)" : x === EXPERTS ? "routed experts N" : x,
      scale: batch ? { type: "log", base: 2 } : { zero: false }, axis: axis
    };
    var yEnc = { field: "mfu", type: "quantitative", title: "MFU", axis: { format: ".0%" } };
    var color = { field: "series", type: "nominal", title: "series", sort: picked.shown,
                  scale: { domain: picked.shown, scheme: picked.shown.length > 10 ? "category20" : "category10" },
                  legend: { columns: picked.shown.length > 12 ? 2 : 1, labelLimit: 260 } };
    var tooltip = [
      { field: "label", title: "point" }, { field: "mfu", title: "MFU", format: ".1%" },
      { field: "step_ms", title: "step (ms)", format: ".1f" }, { field: "tokens_per_s_per_gpu", title: "tokens/s/GPU", format: ",.0f" },
      { field: "device_GiB", title: "device GiB", format: ".1f" }, { field: "capacity_GiB", title: "capacity GiB", format: ".1f" },
      { field: "breaking_phase", title: "peak phase" }];
    var layers = [{
      name: "simulated", data: { values: fits },
      mark: { type: "line", point: { size: 60, filled: true } },
      encoding: { x: xEnc, y: yEnc, color: color, tooltip: tooltip }
    }];
    if (ooms.length) {
      var zero = { field: "zero", type: "quantitative" };
      layers.push({ name: "oom_points", data: { values: ooms }, mark: { type: "point", shape: "cross", size: 160, filled: true, strokeWidth: 1 },
                    encoding: { x: xEnc, y: zero, color: color, tooltip: tooltip } });
      layers = layers.concat(oomLayer(ooms.map(function (p) { return Object.assign({ why: oomWhy(p.result) }, p); }), xEnc, zero));
    }
    var at = function (row) { return { x: row.values[x], series: labelOf(m.axes, row.values, x) || row.result.design }; };
    layers = layers.concat(publishedLayers(publishedData(on, "mfu", at), xEnc, { field: "published", type: "quantitative" },
                                           { field: "series", type: "nominal" }));
    var bands = [];
    on.forEach(function (row) {
      row.published.forEach(function (p) {
        if (p.mfu_min === undefined) return;
        bands.push(Object.assign(at(row), { lo: p.mfu_min, hi: p.mfu_max, id: p.id, source: p.source, gap: p.known_gap || "",
                                            text: percent(p.mfu_min) + "\u2013" + percent(p.mfu_max) }));
      });
    });
    if (bands.length) {
      layers.push({ name: "published_band", data: { values: bands }, mark: { type: "rule", strokeWidth: 10, opacity: 0.35 },
                    encoding: { x: xEnc, y: { field: "lo", type: "quantitative" }, y2: { field: "hi" },
                                color: { field: "series", type: "nominal" }, tooltip: PUBLISHED_TOOLTIP } });
    }
    layers = layers.concat(referenceLayers(m, x));
    var title = batch ? "MFU vs global batch"
      : x === EXPERTS ? "MFU vs routed-expert count, OOM marked" : "MFU vs " + x;
    return {
      name: "mfu-vs-" + shortName(x), title: title,
      caption: (picked.shown.length < picked.total ? "The " + picked.shown.length + " series of the " + picked.total +
        " with the best MFU; the table lists every point. " : "") +
        (beyond ? beyond + " out-of-memory point(s) past the largest " + x + " that fits are not drawn. " : "") +
        "Simulated MFU per series. A cross on the zero line marked OOM is a point whose device memory exceeds " +
        "capacity. Hollow diamonds are published measurements of the same runs, labelled with their value; a shaded bar " +
        "is a published range. Dashed lines are the sweep's reference points without this axis (the dense models), " +
        "dotted lines their published values.",
      spec: { width: 640, height: 320, layer: layers, resolve: { scale: { color: "shared" } } }
    };
  }

  // Horizontal rules for the ok points that lack axis `x` (Figure 8b's dense references): the
  // simulated MFU dashed, a published MFU of the same run dotted. One label per reference at
  // the right gives both values; neighbouring labels alternate above and below their lines.
  function referenceLayers(m, x) {
    var refs = m.ok.filter(function (r) { return !(x in r.values); });
    if (!refs.length) return [];
    var simulated = refs.map(function (r) {
      var pub = r.published.filter(function (p) { return p.mfu !== undefined; }).map(function (p) { return percent(p.mfu); });
      return { mfu: r.result.mfu, label: r.label,
               text: r.label + ": simulated " + percent(r.result.mfu) + (r.result.oom ? " OOM" : "") +
                 (pub.length ? ", published " + pub.join(", ") : "") };
    }).sort(function (a, b) { return b.mfu - a.mfu; });
    var y = { field: "mfu", type: "quantitative" };
    var label = function (name, values, above) {
      return { name: name, data: { values: values },
               mark: { type: "text", align: "right", baseline: above ? "bottom" : "top", dy: above ? -2 : 2, fontSize: 10,
                       color: REFERENCE },
               encoding: { x: { value: 636 }, y: y, text: { field: "text" } } };
    };
    var out = [
      { name: "reference", data: { values: simulated }, mark: { type: "rule", strokeDash: [7, 4], strokeWidth: 1.5, color: REFERENCE },
        encoding: { y: y, tooltip: [{ field: "text", title: "reference" }] } },
      label("reference_labels", simulated.filter(function (v, i) { return i % 2 === 0; }), true)];
    if (simulated.length > 1) out.push(label("reference_labels_below", simulated.filter(function (v, i) { return i % 2 === 1; }), false));
    var published = publishedData(refs, "mfu", function (r) { return { label: r.label }; });
    if (published.length) {
      out.push({ name: "published_reference", data: { values: published },
                 mark: { type: "rule", strokeDash: [2, 3], strokeWidth: 2, color: PUBLISHED.color },
                 encoding: { y: { field: "published", type: "quantitative" }, tooltip: PUBLISHED_TOOLTIP } });
    }
    return out;
  }

  // MFU per point, when no numeric axis gives a line (a design-only comparison); OOM bars are
  // red and marked, published MFU of the same run is a labelled diamond on the bar.
  function mfuBars(m) {
    var values = m.ok.map(function (r) {
      return { label: r.label, mfu: r.result.mfu, verdict: r.result.oom ? "OOM" : "fits", why: oomWhy(r.result) };
    });
    var x = { field: "label", type: "nominal", sort: m.ok.map(function (r) { return r.label; }), title: null, axis: { labelAngle: -30 } };
    var y = { field: "mfu", type: "quantitative", title: "MFU", axis: { format: ".0%" } };
    var layers = [{
      name: "simulated", data: { values: values }, mark: "bar",
      encoding: {
        x: x, y: y,
        color: { field: "verdict", type: "nominal", scale: { domain: ["fits", "OOM"], range: ["#2e75b6", OOM_RED] }, title: "memory" },
        tooltip: [{ field: "label", title: "point" }, { field: "mfu", title: "MFU", format: ".1%" }, { field: "verdict" }]
      }
    }];
    layers = layers.concat(oomLayer(values.filter(function (v) { return v.verdict === "OOM"; }), x, y));
    layers = layers.concat(publishedLayers(publishedData(m.ok, "mfu", function (r) { return { label: r.label }; }), x,
                                           { field: "published", type: "quantitative" }, null));
    return {
      name: "mfu-per-point", title: "MFU per point",
      caption: "Simulated MFU; red bars marked OOM do not fit in device memory. Hollow diamonds are published measurements of the same runs.",
      spec: { width: { step: 64 }, height: 280, layer: layers }
    };
  }

  // The comparison's batch-crossover probes: MFU of each DDP/FSDP pair at every global batch
  // tried, and a rule where the DDP design reaches the FSDP design's MFU.
  function crossoverChart(comparison) {
    var values = [], seen = {}, rules = [];
    comparison.batch_crossovers.forEach(function (c) {
      c.probes.forEach(function (p) {
        [[c.ddp_design, p.ddp_mfu], [c.fsdp_design, p.fsdp_mfu]].forEach(function (d) {
          var key = d[0] + "@" + p.global_batch_tokens;
          if (seen[key]) return;
          seen[key] = true;
          values.push({ x: p.global_batch_tokens, design: d[0], mfu: d[1], batch: tokens(p.global_batch_tokens) });
        });
      });
      if (c.global_batch_tokens !== null)
        rules.push({ x: c.global_batch_tokens, text: c.ddp_design + " \u2265 " + c.fsdp_design + " from " + tokens(c.global_batch_tokens) });
    });
    var batches = [];
    values.forEach(function (v) { if (batches.indexOf(v.x) < 0) batches.push(v.x); });
    var xEnc = { field: "x", type: "quantitative", title: "global batch (tokens, log2 scale)",
                 scale: { type: "log", base: 2, nice: false, padding: 24 },
                 axis: { values: batches, labelExpr: "datum.value >= 1048576 ? datum.value / 1048576 + 'Mi' : datum.value / 1024 + 'Ki'" } };
    var layers = [{
      name: "probes", data: { values: values }, mark: { type: "line", point: { size: 60, filled: true } },
      encoding: { x: xEnc, y: { field: "mfu", type: "quantitative", title: "MFU", axis: { format: ".0%" } },
                  color: { field: "design", type: "nominal", title: "design" },
                  tooltip: [{ field: "design" }, { field: "batch", title: "global batch" }, { field: "mfu", title: "MFU", format: ".1%" }] }
    }];
    if (rules.length) {
      layers.push({ name: "crossover", data: { values: rules }, mark: { type: "rule", strokeDash: [5, 3], color: REFERENCE },
                    encoding: { x: xEnc, tooltip: [{ field: "text", title: "crossover" }] } });
      // Each label runs up its rule from the bottom, so labels of near rules do not collide.
      layers.push({ name: "crossover_labels", data: { values: rules },
                    mark: { type: "text", angle: -90, align: "left", baseline: "bottom", dx: 6, dy: -3, fontSize: 10 },
                    encoding: { x: xEnc, y: { value: 280 }, text: { field: "text" } } });
    }
    return {
      name: "batch-crossover", title: "Batch crossover: MFU at the global batches tried",
      caption: "The comparison doubles the global batch from one microbatch per rank until each DDP design's MFU reaches the FSDP design's; the dashed rule marks where it does.",
      spec: { width: 480, height: 280, layer: layers }
    };
  }

  // Bars stacked by `categories` (name, colour) per point label; `y` says the axis: absolute
  // or normalized to shares; `unit` names what the tooltip's amount is in. `more(x)` gives the
  // layers drawn over the bars (capacity ticks, OOM and published marks) on the same x.
  function stackedBars(name, title, caption, values, known, y, more) {
    // The known categories present, in their order, then any new ones (a newer simulator's).
    var extra = ["#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
    var present = values.map(function (v) { return v.part; });
    var categories = known.filter(function (c) { return present.indexOf(c[0]) >= 0; });
    present.forEach(function (p) {
      if (!categories.some(function (c) { return c[0] === p; })) categories.push([p, extra[categories.length % extra.length]]);
    });
    var order = {};
    categories.forEach(function (c, i) { order[c[0]] = i; });
    values.forEach(function (v) { v.order = order[v.part]; });
    var labels = [];
    values.forEach(function (v) { if (labels.indexOf(v.label) < 0) labels.push(v.label); });
    // Vertical labels: a label's box is one line of text wide, so labels a step apart never overlap.
    var x = { field: "label", type: "nominal", sort: labels, title: null, axis: { labelAngle: -90, labelLimit: 220 } };
    var bars = {
      name: "bars", data: { values: values }, mark: "bar",
      encoding: {
        x: x, y: { field: "amount", type: "quantitative", title: y.title, stack: y.normalize ? "normalize" : "zero",
                   axis: y.normalize ? { format: ".0%" } : {} },
        color: { field: "part", type: "nominal", title: null, sort: categories.map(function (c) { return c[0]; }),
                 scale: { domain: categories.map(function (c) { return c[0]; }), range: categories.map(function (c) { return c[1]; }) } },
        order: { field: "order", type: "quantitative" },
        tooltip: [{ field: "label", title: "point" }, { field: "part" }, { field: "amount", format: ".2f", title: y.unit }, { field: "share", format: ".1%" }]
      }
    };
    return { name: name, title: title, caption: caption,
             spec: { width: { step: Math.max(MIN_BAR_STEP, Math.min(64, BARS_WIDTH / Math.max(1, labels.length))) }, height: 320,
                     layer: [bars].concat(more(x)) } };
  }

  // A bar per point reads up to MAX_BARS points: past that, the best by MFU that fit, then the
  // best of those that do not, in point order; the caption says how many are drawn.
  var MAX_BARS = 48;
  // The bars' width in pixels (the card's inner width less the legend), and the narrowest step
  // that keeps a vertical label (11 px text) clear of its neighbours.
  var BARS_WIDTH = 760, MIN_BAR_STEP = 15;
  function barRows(m) {
    if (m.ok.length <= MAX_BARS) return m.ok;
    var ranked = m.ok.slice().sort(function (a, b) {
      return (a.result.oom - b.result.oom) || (b.result.mfu - a.result.mfu) || (a.index - b.index);
    }).slice(0, MAX_BARS);
    return ranked.sort(function (a, b) { return a.index - b.index; });
  }
  function barNote(m) {
    return m.ok.length <= MAX_BARS ? "" : "The " + MAX_BARS + " points of the " + m.ok.length +
      " simulated with the best MFU (those that fit first); the table lists every point. ";
  }

  // Per-rank memory of the worst stage by class against usable capacity (the report's Figure 9),
  // with OOM marked over the bars and the published peak allocation and OOM verdicts beside them.
  function memoryBars(m) {
    var values = [], tops = [];
    barRows(m).forEach(function (row) {
      var r = row.result, parts = Object.assign({}, r.memory_by_class || {});
      var entries = Object.keys(parts).map(function (k) { return [k, parts[k].GiB]; });
      entries.push(["allocator_fragmentation", r.peak_reserved_GiB - r.peak_allocated_GiB]);
      entries.push(["runtime_reserves", r.device_total_GiB - r.peak_reserved_GiB]);
      entries.forEach(function (e) {
        if (e[1] > 0) values.push({ label: row.label, part: e[0], amount: e[1], share: e[1] / r.device_total_GiB });
      });
      tops.push({ label: row.label, capacity_GiB: r.capacity_GiB, top: Math.max(r.device_total_GiB, r.capacity_GiB),
                  oom: r.oom, why: oomWhy(r) });
    });
    // A published verdict sits a little above the taller of the bar and the capacity tick.
    var at = function (row) { return { label: row.label, above: 1.12 * Math.max(row.result.device_total_GiB, row.result.capacity_GiB) }; };
    var verdicts = publishedData(barRows(m), "oom", at).map(function (p) { return Object.assign(p, { text: p.published ? "OOM" : "fits" }); });
    var gib = { field: "GiB", type: "quantitative" };
    return stackedBars("memory-by-class", "Per-rank memory by class against capacity",
      barNote(m) + "Peak device memory of the worst stage: persistent state, the peak phase's working set, allocator fragmentation " +
      "and runtime reserves. The red tick is usable capacity; OOM marks a bar over it. Hollow diamonds are a published " +
      "peak allocation of the same run; a triangle is a published verdict (filled red: OOM, hollow: fits).",
      values, MEMORY_CLASSES, { title: "GiB per rank", unit: "GiB" }, function (x) {
        var top = { field: "top", type: "quantitative" };
        var layers = [{
          name: "capacity", data: { values: tops }, mark: { type: "tick", color: OOM_RED, thickness: 3, size: 40 },
          encoding: { x: x, y: { field: "capacity_GiB", type: "quantitative" },
                      tooltip: [{ field: "label", title: "point" }, { field: "capacity_GiB", title: "usable capacity GiB", format: ".1f" }] }
        }].concat(oomLayer(tops.filter(function (t) { return t.oom; }), x, top));
        var allocated = publishedData(barRows(m), "peak_allocated_GiB", function (r) { return { label: r.label }; }).map(function (p) {
          return Object.assign(p, { GiB: p.published, text: p.published.toFixed(1) + " GiB" });
        });
        layers = layers.concat(publishedLayers(allocated, x, gib, null));
        if (verdicts.length) {
          layers.push({ name: "published_verdict", data: { values: verdicts },
                        mark: { type: "point", shape: "triangle-down", size: 90, strokeWidth: 2 },
                        encoding: { x: x, y: { field: "above", type: "quantitative" }, tooltip: PUBLISHED_TOOLTIP,
                                    fill: { condition: { test: "datum.published", value: OOM_RED }, value: "transparent" },
                                    stroke: { condition: { test: "datum.published", value: OOM_RED }, value: "#1b6e3a" } } });
        }
        return layers;
      });
  }

  // Where the critical rank's step time goes: compute, exposed communication, idle; OOM marked.
  function exposedBars(m) {
    var values = [], ooms = [];
    barRows(m).forEach(function (row) {
      var r = row.result, step = r.step_time_s, exposed = r.exposed_s || {};
      var entries = Object.keys(exposed).map(function (k) { return [k, exposed[k]]; });
      entries.push(["idle / bubble", r.idle_s || 0]);
      entries.forEach(function (e) {
        if (e[1] > 0) values.push({ label: row.label, part: e[0], amount: e[1] * 1e3, share: step > 0 ? e[1] / step : 0 });
      });
      if (r.oom) ooms.push({ label: row.label, whole: 1, why: oomWhy(r) });
    });
    return stackedBars("exposed-time", "Exposed time breakdown per point (share of step time)",
      barNote(m) + "The critical rank's step split into compute, exposed (not overlapped) communication and idle/bubble time; the tooltip gives milliseconds. OOM marks a point that does not fit in memory.",
      values, PHASES, { title: "share of step time", unit: "ms", normalize: true }, function (x) {
        return oomLayer(ooms, x, { field: "whole", type: "quantitative" });
      });
  }

  // The charts this sweep supports, in reading order; a comparison adds its crossover probes.
  function choose(m, comparison) {
    var charts = [];
    var numeric = m.axes.filter(isNumericAxis);
    numeric.sort(function (a, b) { return rank(a.path) - rank(b.path); });
    numeric.forEach(function (a) { charts.push(mfuVersus(m, a.path)); });
    if (!numeric.length) charts.push(mfuBars(m));
    if (comparison && comparison.batch_crossovers.some(function (c) { return c.probes.length; })) charts.push(crossoverChart(comparison));
    charts.push(memoryBars(m));
    charts.push(exposedBars(m));
    return charts;
  }

  function rank(path) { return path === BATCH ? 0 : path === EXPERTS ? 1 : 2; }

  return { model: M.model, choose: choose, shortName: shortName, formatValue: M.formatValue };
})();
