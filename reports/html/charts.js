// Vega-Lite specs for the moesim sweep page, chosen from the axes the sweep has. Every chart
// reads only the rows built here from the embedded moesim-sweep/1 document (see page.js).
"use strict";

var moesimCharts = (function () {
  var BATCH = "plan.batch.global_batch_tokens";
  var EXPERTS = "architecture.moe.num_experts";
  // Ledger classes in stacking order (models/memory/ledger.hpp), then what sits on top of the
  // allocator's view: fragmentation (reserved - allocated) and runtime reserves (CUDA context,
  // NCCL, library workspaces; device total - reserved).
  var MEMORY_CLASSES = [
    ["compute_weights", "#1f4e79"], ["grad_buffers", "#2e75b6"], ["main_weights", "#5b9bd5"],
    ["optimizer_states", "#9dc3e6"], ["activations", "#c55a11"], ["activation_grads", "#f4b183"],
    ["logits_loss", "#bf9000"], ["weight_grad_transient", "#ffd966"], ["fsdp_materialized", "#548235"],
    ["fsdp_grad_unsharded", "#a9d18e"], ["ep_comm_buffers", "#7030a0"], ["optimizer_transients", "#c9a0dc"],
    ["allocator_fragmentation", "#a6a6a6"], ["runtime_reserves", "#595959"]];
  // Critical-rank time in the order sim/task_graph.hpp lists the phases, then idle.
  var PHASES = [
    ["forward", "#1f4e79"], ["backward", "#2e75b6"], ["recompute", "#9dc3e6"], ["grad_accumulate", "#bf9000"],
    ["optimizer", "#ffd966"], ["fsdp_gather", "#548235"], ["fsdp_reduce_scatter", "#a9d18e"], ["grad_sync", "#c55a11"],
    ["weight_rebuild", "#f4b183"], ["ep_dispatch", "#7030a0"], ["ep_combine", "#c9a0dc"], ["pp_p2p", "#833c0b"],
    ["idle / bubble", "#bfbfbf"]];

  function shortName(path) {
    if (path === BATCH) return "batch";
    if (path === EXPERTS) return "experts";
    var parts = String(path).split(".");
    return parts[parts.length - 1];
  }

  function formatValue(path, v) {
    if (typeof v === "number" && path === BATCH) return tokens(v);
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  function tokens(n) {
    if (n >= 1048576 && n % 1048576 === 0) return n / 1048576 + "Mi";
    if (n >= 1024 && n % 1024 === 0) return n / 1024 + "Ki";
    return String(n);
  }

  function isNumericAxis(axis) {
    return axis.values.length > 1 && axis.values.every(function (v) { return typeof v === "number"; });
  }

  // Label of a point from the axis values, skipping `except`; the design value goes bare.
  function labelOf(axes, values, except) {
    var parts = [];
    axes.forEach(function (a) {
      if (a.path === except || !(a.path in values)) return;
      var v = formatValue(a.path, values[a.path]);
      parts.push(a.path === "design" ? v : shortName(a.path) + "=" + v);
    });
    return parts.join(" \u00b7 ");
  }

  // One row per point: axis values, label, status, and the result's headline numbers.
  function model(doc) {
    var axes = (doc.axes || []).map(function (a) { return { path: a.path, values: a.values || [] }; });
    var seen = {};
    var rows = doc.points.map(function (p) {
      var r = p.result || {};
      var values = p.values || {};
      var label = labelOf(axes, values, null) || r.design || "point " + p.index;
      if (seen[label]) label = "#" + p.index + " " + label;
      seen[label] = true;
      return { index: p.index, values: values, label: label, ok: p.status === "ok", error: p.error || "", result: r };
    });
    return { doc: doc, axes: axes, rows: rows, ok: rows.filter(function (r) { return r.ok; }) };
  }

  function mfuPoint(m, row, x) {
    var r = row.result;
    var series = labelOf(m.axes, row.values, x) || r.design;
    return {
      x: row.values[x], series: series, label: row.label, mfu: r.mfu, oom: !!r.oom,
      step_ms: r.step_time_s * 1e3, tokens_per_s_per_gpu: r.tokens_per_s_per_gpu,
      device_GiB: r.device_total_GiB, capacity_GiB: r.capacity_GiB, breaking_phase: r.breaking_phase
    };
  }

  // MFU against one numeric axis, a line per remaining-axes combination (per design when the
  // other axis is the design). Points that do not fit are drawn as crosses on the zero line.
  function mfuVersus(m, x) {
    var points = m.ok.filter(function (r) { return x in r.values; }).map(function (r) { return mfuPoint(m, r, x); });
    var fits = points.filter(function (p) { return !p.oom; });
    var ooms = points.filter(function (p) { return p.oom; });
    var batch = x === BATCH;
    var axis = { values: m.axes.filter(function (a) { return a.path === x; })[0].values.slice() };
    if (batch) axis.labelExpr = "datum.value >= 1048576 ? datum.value / 1048576 + 'Mi' : datum.value / 1024 + 'Ki'";
    var xEnc = {
      field: "x", type: "quantitative", title: batch ? "global batch (tokens, log2 scale)" : x === EXPERTS ? "routed experts N" : x,
      scale: batch ? { type: "log", base: 2 } : { zero: false }, axis: axis
    };
    var color = { field: "series", type: "nominal", title: "series" };
    var tooltip = [
      { field: "label", title: "point" }, { field: "mfu", title: "MFU", format: ".1%" },
      { field: "step_ms", title: "step (ms)", format: ".1f" }, { field: "tokens_per_s_per_gpu", title: "tokens/s/GPU", format: ",.0f" },
      { field: "device_GiB", title: "device GiB", format: ".1f" }, { field: "capacity_GiB", title: "capacity GiB", format: ".1f" },
      { field: "breaking_phase", title: "peak phase" }];
    var layers = [{
      data: { values: fits },
      mark: { type: "line", point: { size: 60, filled: true } },
      encoding: { x: xEnc, y: { field: "mfu", type: "quantitative", title: "MFU", axis: { format: ".0%" } }, color: color, tooltip: tooltip }
    }];
    if (ooms.length) {
      layers.push({
        data: { values: ooms.map(function (p) { return Object.assign({}, p, { zero: 0 }); }) },
        mark: { type: "point", shape: "cross", size: 160, filled: true, strokeWidth: 1 },
        encoding: { x: xEnc, y: { field: "zero", type: "quantitative" }, color: color, tooltip: tooltip }
      });
      layers.push({
        data: { values: ooms.map(function (p) { return Object.assign({}, p, { zero: 0 }); }) },
        mark: { type: "text", text: "OOM", dy: -12, fontWeight: "bold" },
        encoding: { x: xEnc, y: { field: "zero", type: "quantitative" }, color: color }
      });
    }
    var title = batch ? "MFU vs global batch (Figure 8a style)"
      : x === EXPERTS ? "MFU vs routed-expert count, OOM marked (Figure 8b style)" : "MFU vs " + x;
    return {
      name: "mfu-vs-" + shortName(x), title: title,
      caption: "Simulated MFU per series; a cross on the zero line (OOM) marks a point whose device memory exceeds capacity.",
      spec: { width: 640, height: 320, layer: layers, resolve: { scale: { color: "shared" } } }
    };
  }

  // MFU per point, when no numeric axis gives a line (a design-only comparison).
  function mfuBars(m) {
    var values = m.ok.map(function (r) { return { label: r.label, mfu: r.result.mfu, verdict: r.result.oom ? "OOM" : "fits" }; });
    return {
      name: "mfu-per-point", title: "MFU per point", caption: "Simulated MFU; red bars do not fit in device memory.",
      spec: {
        width: { step: 48 }, height: 280, data: { values: values }, mark: "bar",
        encoding: {
          x: { field: "label", type: "nominal", sort: null, title: null, axis: { labelAngle: -30 } },
          y: { field: "mfu", type: "quantitative", title: "MFU", axis: { format: ".0%" } },
          color: { field: "verdict", type: "nominal", scale: { domain: ["fits", "OOM"], range: ["#2e75b6", "#b3261e"] }, title: "memory" },
          tooltip: [{ field: "label", title: "point" }, { field: "mfu", title: "MFU", format: ".1%" }, { field: "verdict" }]
        }
      }
    };
  }

  // Bars stacked by `categories` (name, colour) per point label; `y` says the axis: absolute
  // (with capacity ticks) or normalized to shares; `unit` names what the tooltip's amount is in.
  function stackedBars(name, title, caption, values, known, y, capacities) {
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
    var x = { field: "label", type: "nominal", sort: labels, title: null, axis: { labelAngle: -30, labelLimit: 220 } };
    var bars = {
      data: { values: values }, mark: "bar",
      encoding: {
        x: x, y: { field: "amount", type: "quantitative", title: y.title, stack: y.normalize ? "normalize" : "zero",
                   axis: y.normalize ? { format: ".0%" } : {} },
        color: { field: "part", type: "nominal", title: null, sort: categories.map(function (c) { return c[0]; }),
                 scale: { domain: categories.map(function (c) { return c[0]; }), range: categories.map(function (c) { return c[1]; }) } },
        order: { field: "order", type: "quantitative" },
        tooltip: [{ field: "label", title: "point" }, { field: "part" }, { field: "amount", format: ".2f", title: y.unit }, { field: "share", format: ".1%" }]
      }
    };
    var layers = [bars];
    if (capacities) {
      layers.push({
        data: { values: capacities }, mark: { type: "tick", color: "#b3261e", thickness: 3, size: 40 },
        encoding: { x: x, y: { field: "capacity_GiB", type: "quantitative" },
                    tooltip: [{ field: "label", title: "point" }, { field: "capacity_GiB", title: "usable capacity GiB", format: ".1f" }] }
      });
    }
    return { name: name, title: title, caption: caption,
             spec: { width: { step: Math.max(28, Math.min(64, 720 / Math.max(1, labels.length))) }, height: 320, layer: layers } };
  }

  // Per-rank memory of the worst stage by class against usable capacity (seed Figure 9 style).
  function memoryBars(m) {
    var values = [], capacities = [];
    m.ok.forEach(function (row) {
      var r = row.result, parts = Object.assign({}, r.memory_by_class || {});
      var entries = Object.keys(parts).map(function (k) { return [k, parts[k].GiB]; });
      entries.push(["allocator_fragmentation", r.peak_reserved_GiB - r.peak_allocated_GiB]);
      entries.push(["runtime_reserves", r.device_total_GiB - r.peak_reserved_GiB]);
      entries.forEach(function (e) {
        if (e[1] > 0) values.push({ label: row.label, part: e[0], amount: e[1], share: e[1] / r.device_total_GiB });
      });
      capacities.push({ label: row.label, capacity_GiB: r.capacity_GiB });
    });
    return stackedBars("memory-by-class", "Per-rank memory by class against capacity (Figure 9 style)",
      "Peak device memory of the worst stage: persistent state, the peak phase's working set, allocator fragmentation and runtime reserves. The red tick is usable capacity.",
      values, MEMORY_CLASSES, { title: "GiB per rank", unit: "GiB" }, capacities);
  }

  // Where the critical rank's step time goes: compute, exposed communication, idle.
  function exposedBars(m) {
    var values = [];
    m.ok.forEach(function (row) {
      var r = row.result, step = r.step_time_s, exposed = r.exposed_s || {};
      var entries = Object.keys(exposed).map(function (k) { return [k, exposed[k]]; });
      entries.push(["idle / bubble", r.idle_s || 0]);
      entries.forEach(function (e) {
        if (e[1] > 0) values.push({ label: row.label, part: e[0], amount: e[1] * 1e3, share: step > 0 ? e[1] / step : 0 });
      });
    });
    return stackedBars("exposed-time", "Exposed time breakdown per design (share of step time)",
      "The critical rank's step split into compute, exposed (not overlapped) communication and idle/bubble time; the tooltip gives milliseconds.",
      values, PHASES, { title: "share of step time", unit: "ms", normalize: true }, null);
  }

  // The charts this sweep supports, in reading order.
  function choose(m) {
    var charts = [];
    var numeric = m.axes.filter(isNumericAxis);
    numeric.sort(function (a, b) { return rank(a.path) - rank(b.path); });
    numeric.forEach(function (a) { charts.push(mfuVersus(m, a.path)); });
    if (!numeric.length) charts.push(mfuBars(m));
    charts.push(memoryBars(m));
    charts.push(exposedBars(m));
    return charts;
  }

  function rank(path) { return path === BATCH ? 0 : path === EXPERTS ? 1 : 2; }

  return { model: model, choose: choose, shortName: shortName, formatValue: formatValue };
})();
