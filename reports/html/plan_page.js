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

  if (spec === null) {
    // No replayed or memory-pruned plan: nothing to place on the chart.
    body.setAttribute("data-charts", "0");
    view.textContent = "No plan was replayed or pruned by memory, so there is nothing to draw.";
    return;
  }
  body.setAttribute("data-charts", "1");
  // SVG, so the page prints sharply and a headless browser's DOM dump shows the marks.
  vegaEmbed(view, spec, { renderer: "svg", actions: false, mode: "vega-lite" }).then(function () {
    body.setAttribute("data-rendered", "1");
  }).catch(function (err) {
    window.moesimRecordError("the frontier chart failed to render: " + (err && err.message ? err.message : err));
  });
})();
