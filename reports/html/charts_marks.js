// Pieces every chart of the moesim sweep page shares (charts.js builds the charts): the rows
// read from the embedded moesim-sweep/1 document with the published measurements of the same
// runs, how values and points are named, and the marks for published values and OOM verdicts.
"use strict";

var moesimMarks = (function () {
  var BATCH = "plan.batch.global_batch_tokens";
  var EXPERTS = "architecture.moe.num_experts";
  // Marks every chart shares: published measurements (hollow diamonds, as in the seed's
  // figures' labelled points), OOM verdicts (red), dense references (dashed rules).
  var PUBLISHED = { shape: "diamond", size: 130, filled: false, strokeWidth: 2.2, color: "#111111" };
  var OOM_RED = "#b3261e";
  var REFERENCE = "#595959";

  function shortName(path) {
    if (path === BATCH) return "batch";
    if (path === EXPERTS) return "experts";
    var parts = String(path).split(".");
    return parts[parts.length - 1];
  }

  // Values as a reader names them: 4Mi tokens, and an input file (architecture=FILE) by its name.
  function formatValue(path, v) {
    if (typeof v === "number" && path === BATCH) return tokens(v);
    if (typeof v === "string" && /\.json$/.test(v)) return v.replace(/^.*\//, "").replace(/\.json$/, "");
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  function percent(v) { return (100 * v).toFixed(1) + "%"; }

  function tokens(n) {
    if (n >= 1048576 && n % 1048576 === 0) return n / 1048576 + "Mi";
    if (n >= 1024 && n % 1024 === 0) return n / 1024 + "Ki";
    return String(n);
  }

  function isNumericAxis(axis) {
    return axis.values.length > 1 && axis.values.every(function (v) { return typeof v === "number"; });
  }

  // Label of a point from its values, skipping `except`: the axes in order, then any value an
  // included point sets beyond them; the design and a whole input file (architecture=FILE) go bare.
  function labelOf(axes, values, except) {
    var parts = [];
    var paths = axes.map(function (a) { return a.path; });
    Object.keys(values).forEach(function (p) { if (paths.indexOf(p) < 0) paths.push(p); });
    paths.forEach(function (path) {
      if (path === except || !(path in values)) return;
      var v = formatValue(path, values[path]);
      parts.push(path === "design" || path.indexOf(".") < 0 ? v : shortName(path) + "=" + v);
    });
    return parts.join(" \u00b7 ");
  }

  // One row per point: axis values, label, status, the result's headline numbers and the
  // published measurements of the same run (published.measurements, by point index).
  function model(doc, published) {
    var axes = (doc.axes || []).map(function (a) { return { path: a.path, values: a.values || [] }; });
    var seen = {};
    var rows = doc.points.map(function (p) {
      var r = p.result || {};
      var values = p.values || {};
      var label = labelOf(axes, values, null) || r.design || "point " + p.index;
      if (seen[label]) label = "#" + p.index + " " + label;
      seen[label] = true;
      return { index: p.index, values: values, label: label, ok: p.status === "ok", error: p.error || "", result: r,
               published: [] };
    });
    var byIndex = {};
    rows.forEach(function (r) { byIndex[r.index] = r; });
    published = published || { datasets: [], measurements: [] };
    published.measurements.forEach(function (p) { if (byIndex[p.point]) byIndex[p.point].published.push(p); });
    return { doc: doc, axes: axes, rows: rows, ok: rows.filter(function (r) { return r.ok; }), published: published };
  }

  // The published measurements of `rows` that have `metric`, each as a mark datum built by `at`.
  function publishedData(rows, metric, at) {
    var out = [];
    rows.forEach(function (row) {
      row.published.forEach(function (p) {
        if (p[metric] === undefined) return;
        out.push(Object.assign(at(row, p), {
          id: p.id, source: p.source, gap: p.known_gap || "", published: p[metric],
          text: typeof p[metric] === "number" && metric.indexOf("mfu") === 0 ? percent(p[metric]) : String(p[metric]) }));
      });
    });
    return out;
  }

  var PUBLISHED_TOOLTIP = [{ field: "id", title: "published" }, { field: "text", title: "measured" },
                           { field: "source", title: "source" }, { field: "gap", title: "known gap" }];

  // A layer of published markers at (x, y) with their labels beside them; `name` makes the
  // SVG group's class (name_marks), which the browser test counts.
  function publishedLayers(values, x, y, color) {
    if (!values.length) return [];
    var enc = { x: x, y: y, tooltip: PUBLISHED_TOOLTIP };
    var mark = Object.assign({ type: "point" }, PUBLISHED);
    if (color) { enc.color = color; delete mark.color; }  // hollow: the colour is the stroke, the series' own
    return [{ name: "published", data: { values: values }, mark: mark, encoding: enc },
            { name: "published_labels", data: { values: values },
              mark: { type: "text", align: "left", dx: 9, dy: -9, fontSize: 10, fontWeight: "bold" },
              encoding: { x: x, y: y, text: { field: "text" } } }];
  }

  // "OOM" above each point that does not fit, at y (a field or a datum), in red.
  // "OOM" over each point that does not fit; past MANY_OOM of them the word runs up the point
  // (vertical), so neighbours' labels do not overlap.
  var MANY_OOM = 8;
  function oomLayer(values, x, y) {
    if (!values.length) return [];
    var mark = values.length > MANY_OOM
      ? { type: "text", text: "OOM", angle: -90, align: "left", baseline: "middle", dy: 0, dx: 0, fontWeight: "bold",
          fontSize: 9, color: OOM_RED, yOffset: -6 }
      : { type: "text", text: "OOM", dy: -10, fontWeight: "bold", color: OOM_RED };
    return [{ name: "oom", data: { values: values }, mark: mark,
              encoding: { x: x, y: y, tooltip: [{ field: "label", title: "point" }, { field: "why", title: "OOM" }] } }];
  }

  function oomWhy(r) {
    return "device " + r.device_total_GiB.toFixed(1) + " of " + r.capacity_GiB.toFixed(1) + " GiB (" + r.breaking_phase + ")";
  }


  return {
    BATCH: BATCH, EXPERTS: EXPERTS, PUBLISHED: PUBLISHED, PUBLISHED_TOOLTIP: PUBLISHED_TOOLTIP, OOM_RED: OOM_RED,
    REFERENCE: REFERENCE, shortName: shortName, formatValue: formatValue, percent: percent, tokens: tokens,
    isNumericAxis: isNumericAxis, labelOf: labelOf, model: model, publishedData: publishedData,
    publishedLayers: publishedLayers, oomLayer: oomLayer, oomWhy: oomWhy
  };
})();
