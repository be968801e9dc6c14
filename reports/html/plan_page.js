// The moesim plan page: draws the throughput-vs-memory chart from its embedded Vega-Lite spec
// (built by reports/plan_frontier_chart.cpp; the tables are static HTML). When the chart has
// rendered, <body data-rendered> equals <body data-charts>, as on the sweep page.
(function () {
  "use strict";
  var body = document.body;
  var spec = JSON.parse(document.getElementById("moesim-plan-frontier").textContent);

  // The table of every candidate shows 100 rows a page (a search of thousands stays readable).
  var PAGE_ROWS = 100;
  var every = document.querySelector("table#plans-table tbody");
  if (every && every.rows.length > PAGE_ROWS) {
    var rows = Array.prototype.slice.call(every.rows), page = 0, pages = Math.ceil(rows.length / PAGE_ROWS);
    var pager = document.createElement("div"), prev = document.createElement("button");
    var next = document.createElement("button"), text = document.createElement("span");
    pager.className = "pager";
    prev.type = next.type = "button";
    prev.textContent = "previous";
    next.textContent = "next";
    var show = function () {
      rows.forEach(function (r, i) { r.hidden = Math.floor(i / PAGE_ROWS) !== page; });
      text.textContent = "rows " + (page * PAGE_ROWS + 1) + "\u2013" + Math.min(rows.length, (page + 1) * PAGE_ROWS) +
        " of " + rows.length;
      prev.disabled = page === 0;
      next.disabled = page === pages - 1;
    };
    prev.addEventListener("click", function () { page -= 1; show(); });
    next.addEventListener("click", function () { page += 1; show(); });
    pager.appendChild(prev);
    pager.appendChild(text);
    pager.appendChild(next);
    every.closest(".table-box").after(pager);
    show();
  }
  var view = document.getElementById("frontier-view");

  // The top-K rank labels (reports/plan_frontier_chart.cpp: odd ranks above right of their plan,
  // even ranks below right). Plans close on the chart would write their labels over each other:
  // in rank order, a label that overlaps one placed before it moves down a line at a time until
  // it clears them all (the chart has room: its scales are padded).
  var LABEL_LAYERS = ["top_labels", "top_labels_below"];
  function separateLabels() {
    var labels = [];
    LABEL_LAYERS.forEach(function (name) {
      view.querySelectorAll("g." + name + "_marks text").forEach(function (t) {
        labels.push({ text: t, rank: Number(String(t.textContent).replace("#", "")) });
      });
    });
    labels.sort(function (a, b) { return a.rank - b.rank; });
    var placed = [];
    var clashes = function (r) {
      return placed.some(function (p) { return window.moesimBoxesOverlap(r, p); });
    };
    labels.forEach(function (l) {
      var moved = 0, r = l.text.getBoundingClientRect();
      // Vega's SVG renderer places a text mark by transform="translate(x,y)".
      var at = /translate\(([-0-9.e]+),\s*([-0-9.e]+)\)/.exec(l.text.getAttribute("transform") || "");
      while (at && clashes(r) && moved < labels.length) {
        moved += 1;
        var y = Number(at[2]) + moved * (r.height + 2);
        l.text.setAttribute("transform", "translate(" + at[1] + "," + y + ")");
        r = l.text.getBoundingClientRect();
      }
      placed.push(r);
    });
  }

  if (spec === null) {
    // No replayed or memory-pruned plan: nothing to place on the chart.
    body.setAttribute("data-charts", "0");
    view.textContent = "No plan was replayed or pruned by memory, so there is nothing to draw.";
    return;
  }
  body.setAttribute("data-charts", "1");
  // SVG, so the page prints sharply and a headless browser's DOM dump shows the marks.
  vegaEmbed(view, spec, { renderer: "svg", actions: false, mode: "vega-lite" }).then(function () {
    separateLabels();
    window.moesimMeasureFit(document.querySelectorAll(".table-box"), LABEL_LAYERS);
    body.setAttribute("data-rendered", "1");
  }).catch(function (err) {
    window.moesimRecordError("the frontier chart failed to render: " + (err && err.message ? err.message : err));
  });
})();
