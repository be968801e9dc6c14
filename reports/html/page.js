// The moesim sweep page: reads the embedded moesim-sweep/1 document, draws the charts that
// charts.js chooses, and builds the sortable table of all points. When every chart has
// rendered, <body data-rendered> equals <body data-charts> (the browser test waits for that).
(function () {
  "use strict";
  var body = document.body;
  var doc = JSON.parse(document.getElementById("moesim-sweep").textContent);
  var published = JSON.parse(document.getElementById("moesim-published").textContent);
  var comparison = JSON.parse(document.getElementById("moesim-comparison").textContent);
  var m = moesimCharts.model(doc, published);

  function element(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function drawCharts() {
    var charts = moesimCharts.choose(m, comparison);
    var holder = document.getElementById("charts");
    body.setAttribute("data-charts", String(charts.length));
    var done = charts.map(function (c) {
      var box = element("section", { "class": "chart", id: "chart-" + c.name, "data-chart": c.name });
      box.appendChild(element("h2", {}, c.title));
      box.appendChild(element("p", { "class": "caption" }, c.caption));
      // The chart scrolls inside its card when it is wider (vega-embed makes its own element
      // shrink-to-fit, so the scrolling box is a wrapper around it).
      var scroll = element("div", { "class": "scroll" });
      var view = element("div", { "class": "view" });
      scroll.appendChild(view);
      box.appendChild(scroll);
      holder.appendChild(box);
      // SVG, so the page prints sharply and a headless browser's DOM dump shows the marks.
      return vegaEmbed(view, c.spec, { renderer: "svg", actions: false, mode: "vega-lite" });
    });
    return Promise.all(done).then(function () {
      measureFit();
      body.setAttribute("data-rendered", String(charts.length));
    });
  }

  // How far the page and the table stick out, charts wider than their card, overlapping labels
  // (page_fit.js; the browser test wants 0 of each at 20, 200 and 2,000 points).
  function measureFit() {
    window.moesimMeasureFit([document.getElementById("points-table")], []);
  }

  // Table columns: key, header, how to read the value from a row, how to show it.
  function columns() {
    var cols = [{ key: "index", head: "#", get: function (r) { return r.index; } }];
    m.axes.forEach(function (a) {
      cols.push({ key: "axis:" + a.path, head: moesimCharts.shortName(a.path), title: a.path, text: true,
                  get: function (r) { return a.path in r.values ? r.values[a.path] : null; },
                  show: function (v) { return v === null ? "" : moesimCharts.formatValue(a.path, v); } });
    });
    function res(field) { return function (r) { return r.ok && field in r.result ? r.result[field] : null; }; }
    function fixed(d) { return function (v) { return v === null ? "" : Number(v).toFixed(d); }; }
    cols.push({ key: "status", head: "status", text: true, get: function (r) { return r.ok ? "ok" : "invalid"; } });
    // The simulator's name for the design, unless a design axis already names it.
    if (!m.axes.some(function (a) { return a.path === "design"; })) cols.push({ key: "design", head: "design", text: true, get: res("design") });
    cols.push(
      { key: "mfu", head: "MFU %", get: res("mfu"), show: function (v) { return v === null ? "" : (100 * v).toFixed(1); } },
      // Long one-word headers may break (after a slash, at a soft hyphen) so the table fits the page.
      { key: "tps", head: "tokens/s/\u200bGPU", get: res("tokens_per_s_per_gpu"), show: function (v) { return v === null ? "" : Math.round(v).toLocaleString("en-US"); } },
      { key: "step", head: "step ms", get: function (r) { var v = res("step_time_s")(r); return v === null ? null : v * 1e3; }, show: fixed(1) },
      { key: "mb", head: "micro\u00adbatches", get: res("microbatches") },
      { key: "alloc", head: "peak alloc. GiB", get: res("peak_allocated_GiB"), show: fixed(1) },
      { key: "device", head: "device GiB", get: res("device_total_GiB"), show: fixed(1) },
      { key: "capacity", head: "capacity GiB", get: res("capacity_GiB"), show: fixed(1) },
      { key: "memory", head: "memory", text: true,
        get: function (r) { return r.ok ? (r.result.oom ? "OOM" : "fits") : null; } },
      { key: "phase", head: "peak phase", text: true, get: res("breaking_phase") },
      { key: "inflight", head: "in flight per stage (microbatch eq.)", text: true,
        get: function (r) { var v = res("in_flight_microbatches")(r); return v === null ? null : v.join(" / "); } });
    // The published measurements of the same runs, when the page has any.
    if (m.published.measurements.length) cols.push({ key: "published", head: "published", text: true, get: publishedText });
    return cols;
  }

  // The published measurements of a point's run, as the table shows them.
  function publishedText(r) {
    if (!r.published.length) return null;
    return r.published.map(function (p) {
      var parts = [];
      if (p.mfu !== undefined) parts.push("MFU " + (100 * p.mfu).toFixed(1) + "%");
      if (p.mfu_min !== undefined) parts.push("MFU " + (100 * p.mfu_min).toFixed(0) + "\u2013" + (100 * p.mfu_max).toFixed(0) + "%");
      if (p.tokens_per_s_per_gpu !== undefined) parts.push(Math.round(p.tokens_per_s_per_gpu).toLocaleString("en-US") + " tok/s/GPU");
      if (p.peak_allocated_GiB !== undefined) parts.push(p.peak_allocated_GiB.toFixed(1) + " GiB alloc.");
      if (p.oom !== undefined) parts.push(p.oom ? "OOM" : "fits");
      return parts.join(", ");
    }).join("; ");
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;   // blanks last in either direction
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), "en", { numeric: true });
  }

  var PAGE_ROWS = 100;
  function drawTable() {
    var cols = columns();
    var table = element("table", { "class": "points" });
    var head = element("tr");
    var tbody = element("tbody");
    var state = { key: "index", dir: 1, page: 0 };
    // A page of rows at a time, so a sweep of thousands of points stays quick to draw and sort.
    var pager = element("div", { "class": "pager" });
    var prev = element("button", { type: "button" }, "previous");
    var next = element("button", { type: "button" }, "next");
    var pagerText = element("span", {}, "");
    prev.addEventListener("click", function () { state.page -= 1; fill(); });
    next.addEventListener("click", function () { state.page += 1; fill(); });
    pager.appendChild(prev);
    pager.appendChild(pagerText);
    pager.appendChild(next);
    cols.forEach(function (c) {
      var th = element("th", { scope: "col", "data-key": c.key, "class": c.text ? "text" : "" }, c.head);
      if (c.title) th.setAttribute("title", c.title);
      th.addEventListener("click", function () {
        state.dir = state.key === c.key ? -state.dir : 1;
        state.key = c.key;
        state.page = 0;
        fill();
      });
      head.appendChild(th);
    });
    var thead = element("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    table.appendChild(tbody);

    function fill() {
      var col = cols.filter(function (c) { return c.key === state.key; })[0];
      var rows = m.rows.slice().sort(function (a, b) {
        var va = col.get(a), vb = col.get(b);
        var blank = va === null || vb === null;
        var c = blank ? compare(va, vb) : state.dir * compare(va, vb);
        return c !== 0 ? c : a.index - b.index;  // stable: ties keep point order
      });
      head.querySelectorAll("th").forEach(function (th) {
        th.setAttribute("aria-sort", th.getAttribute("data-key") === state.key ? (state.dir > 0 ? "ascending" : "descending") : "none");
      });
      tbody.textContent = "";
      var pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
      state.page = Math.min(state.page, pages - 1);
      pager.hidden = pages === 1;
      pagerText.textContent = "rows " + (state.page * PAGE_ROWS + 1) + "\u2013" +
        Math.min(rows.length, (state.page + 1) * PAGE_ROWS) + " of " + rows.length;
      prev.disabled = state.page === 0;
      next.disabled = state.page === pages - 1;
      rows.slice(state.page * PAGE_ROWS, (state.page + 1) * PAGE_ROWS).forEach(function (r) {
        var tr = element("tr", { "class": r.ok ? "" : "invalid", "data-index": String(r.index) });
        var statusAt = cols.findIndex(function (c) { return c.key === "status"; });
        cols.forEach(function (c, i) {
          if (!r.ok && i > statusAt) {
            // An invalid point has no results: its error fills the rest of the row.
            if (i === statusAt + 1) tr.appendChild(element("td", { "class": "error", colspan: String(cols.length - i) }, r.error));
            return;
          }
          var v = c.get(r);
          var cls = c.text ? "text" : "";
          if (c.key === "memory" && v) cls += v === "OOM" ? " oom" : " fits";
          var td = element("td", { "class": cls }, c.show ? c.show(v) : v === null ? "" : String(v));
          if (c.key === "published" && v) td.setAttribute("title", r.published.map(function (p) { return p.id + ": " + p.source; }).join("\n"));
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
    }
    fill();
    document.getElementById("points-table").appendChild(table);
    document.getElementById("points-table").appendChild(pager);
  }

  // A table of `rows` under `headers`, each row a list of cell texts, rows of class `cls`.
  function fillTable(table, headers, rows, cls) {
    var head = element("tr");
    headers.forEach(function (h) { head.appendChild(element("th", { scope: "col", "class": "text" }, h)); });
    var thead = element("thead"), tbody = element("tbody");
    thead.appendChild(head);
    rows.forEach(function (cells) {
      var tr = element("tr", { "class": cls });
      cells.forEach(function (c) { tr.appendChild(element("td", { "class": "text" }, c)); });
      tbody.appendChild(tr);
    });
    table.appendChild(thead);
    table.appendChild(tbody);
  }

  // The comparison's batch crossovers and expert-count memory walls (moesim compare).
  function drawComparison() {
    if (!comparison) return;
    document.getElementById("comparison").hidden = false;
    var tokens = function (n) { return moesimCharts.formatValue("plan.batch.global_batch_tokens", n); };
    var pct = function (v) { return (100 * v).toFixed(1) + "%"; };
    fillTable(document.getElementById("batch-crossovers"), ["DDP design", "FSDP design", "crossover (global batch)", "MFU at each batch tried (DDP / FSDP)"],
      comparison.batch_crossovers.map(function (c) {
        return [c.ddp_design, c.fsdp_design,
                c.global_batch_tokens === null ? "none: " + c.note : tokens(c.global_batch_tokens) + " tokens",
                c.probes.map(function (p) { return tokens(p.global_batch_tokens) + ": " + pct(p.ddp_mfu) + " / " + pct(p.fsdp_mfu); }).join("; ")];
      }), "crossover");
    fillTable(document.getElementById("expert-walls"), ["design", "largest routed-expert count that fits", "first that does not fit", "note"],
      comparison.expert_walls.map(function (w) {
        return [w.design, w.largest_fitting_experts === null ? "none" : String(w.largest_fitting_experts),
                w.first_oom_experts === null ? "none" : String(w.first_oom_experts), w.note];
      }), "wall");
  }

  function showVersions() {
    var v = document.getElementById("library-versions");
    if (v && window.vega && window.vegaLite && window.vegaEmbed) {
      v.textContent = "Vega " + vega.version + ", Vega-Lite " + vegaLite.version + " and Vega-Embed " + vegaEmbed.version;
    }
  }

  showVersions();
  drawComparison();
  drawTable();
  drawCharts().catch(function (err) {
    window.moesimRecordError("a chart failed to render: " + (err && err.message ? err.message : err));
  });
})();
